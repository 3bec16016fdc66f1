package framing

import (
	"slices"
	"strings"
)

// Filespecs: the names of a GET, a listing or a REMOTE DELETE, several
// to a packet, as C-Kermit writes them (protocol.md §8).

// SplitSpec splits a Kermit filespec at spaces, honouring {braces}: a
// word that begins with "{" runs to its closing "}" (groupEnd), and is
// taken without them ("{my file} b" is "my file" and "b"; "{{x}}" is
// "{x}"). Braces elsewhere are part of the name ("a{b}c"), as C-Kermit
// takes them.
func SplitSpec(spec string) []string {
	var out []string
	for i := 0; i < len(spec); {
		if spec[i] == ' ' {
			i++
			continue
		}
		if spec[i] == '{' {
			if k := groupEnd(spec, i+1); k >= 0 {
				if k > i+1 {
					out = append(out, spec[i+1:k])
				}
				i = k + 1
				continue
			}
		}
		j := strings.IndexByte(spec[i:], ' ')
		if j < 0 {
			j = len(spec) - i
		}
		out = append(out, spec[i:i+j])
		i += j
	}
	return out
}

// groupEnd is the index of the "}" that closes a group opened just
// before from: the first that ends a word (followed by a space or the
// end) with the braces inside the group balanced ("{my {odd} file}");
// failing that, the first that ends a word ("{c{d e}"); else -1.
func groupEnd(spec string, from int) int {
	depth, first := 1, -1
	for k := from; k < len(spec); k++ {
		switch spec[k] {
		case '{':
			depth++
		case '}':
			depth--
			if k+1 < len(spec) && spec[k+1] != ' ' {
				continue
			}
			if depth <= 0 {
				return k
			}
			if first < 0 {
				first = k
			}
		}
	}
	return first
}

// SpecWord is name as one word of a filespec: in braces if it has a
// space or begins with one. Some names cannot be written so that
// SplitSpec gives them back among others ("a} {b"): JoinSpec tells.
func SpecWord(name string) string {
	if strings.Contains(name, " ") || strings.HasPrefix(name, "{") {
		return "{" + name + "}"
	}
	return name
}

// JoinSpec is names as one filespec, and whether SplitSpec gives exactly
// names back from it. Where it does not, a name holds "} " or the like
// and must go alone, where a server takes an existing name whole.
func JoinSpec(names []string) (string, bool) {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = SpecWord(n)
	}
	spec := strings.Join(q, " ")
	return spec, slices.Equal(SplitSpec(spec), names)
}
