package datachan_test

import (
	"kerf/datachan"
	"kerf/kermit"
)

var _ kermit.DataPath = (*datachan.Path)(nil)
