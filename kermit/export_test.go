package kermit

// AddParity is addParity, for the external tests (FuzzServe's seeds).
var AddParity = addParity
