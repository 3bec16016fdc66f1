package kermit

// AddParity is addParity, for the external tests (FuzzServe's seeds).
var AddParity = addParity

// WithoutDirAttrs makes cfg a kerf from before directory attributes
// (capas2DirAttrs), for tests of that peer.
func WithoutDirAttrs(cfg Config) Config { cfg.noDirAttrs = true; return cfg }

// WithoutUnlessThere makes cfg a kerf from before the disposition '='
// (capas3UnlessThere).
func WithoutUnlessThere(cfg Config) Config { cfg.noUnlessThere = true; return cfg }
