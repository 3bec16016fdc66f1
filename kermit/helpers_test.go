package kermit_test

import "kerf/framing"

func framingCheck(n int) framing.CheckType { return framing.CheckType(n) }
