package serialfallback

import (
	"fmt"

	"kerf/framing"
)

// parseParity reads a LinkConfig.Parity name.
func parseParity(s string) (framing.Parity, error) {
	if p, ok := framing.ParityByName(s); ok {
		return p, nil
	}
	return 0, fmt.Errorf("%w: parity %q is not one of none, even, odd, mark, space", ErrInvalidConfig, s)
}
