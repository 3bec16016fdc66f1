package datachan

import "sort"

// idSet is a set of file ids kept as sorted, disjoint, non-adjacent
// half-open ranges: ids that mostly come in order (a session's files
// finish one after another) take a range or a few, however many there
// are.
type idSet struct{ r []idRange }

type idRange struct{ lo, hi uint32 } // [lo, hi)

// find is the index of the first range that ends at or after id.
func (s *idSet) find(id uint32) int {
	return sort.Search(len(s.r), func(i int) bool { return s.r[i].hi >= id })
}

func (s *idSet) has(id uint32) bool {
	i := s.find(id)
	return i < len(s.r) && s.r[i].lo <= id && id < s.r[i].hi
}

// add puts id in the set, joining the ranges it touches, and reports
// whether it could: the largest id fits no half-open range (a session's
// ids never get there).
func (s *idSet) add(id uint32) bool {
	if id == ^uint32(0) {
		return false
	}
	i := s.find(id)
	switch {
	case i < len(s.r) && s.r[i].lo <= id && id < s.r[i].hi:
		return true // there already
	case i < len(s.r) && s.r[i].hi == id:
		s.r[i].hi++ // extends range i, perhaps up to the next
		if i+1 < len(s.r) && s.r[i+1].lo == s.r[i].hi {
			s.r[i].hi = s.r[i+1].hi
			s.r = append(s.r[:i+1], s.r[i+2:]...)
		}
	case i < len(s.r) && s.r[i].lo == id+1:
		s.r[i].lo = id
	default:
		s.r = append(s.r, idRange{})
		copy(s.r[i+1:], s.r[i:])
		s.r[i] = idRange{id, id + 1}
	}
	return true
}
