package filestore

// SetSpillAt makes a directory's list write its entries out as a run
// once it holds n bytes, until restore is called.
func SetSpillAt(n int) (restore func()) {
	old := spillAt
	spillAt = n
	return func() { spillAt = old }
}
