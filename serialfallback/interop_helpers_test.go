package serialfallback_test

import (
	"os"

	"kerf/kermit"
)

func openFile(p string) (kermit.FileReader, error) { return os.Open(p) }
