package kermit

// AddParity is addParity, for the external tests (FuzzServe's seeds).
var AddParity = addParity

// WithoutDirAttrs makes cfg a kerf from before directory attributes
// (capas2DirAttrs), for tests of that peer.
func WithoutDirAttrs(cfg Config) Config { cfg.noDirAttrs = true; return cfg }

// WithoutUnlessThere makes cfg a kerf from before the disposition '='
// (capas3UnlessThere).
func WithoutUnlessThere(cfg Config) Config { cfg.noUnlessThere = true; return cfg }

// WithVerdictSize makes a sender wait for the verdict on files of n
// bytes and more (Session.verdictSize).
func WithVerdictSize(cfg Config, n int64) Config { cfg.verdictSize = n; return cfg }
