package core

import (
	"cmp"
	"strings"
)

// CompareIDs orders stream entry IDs ("ms-seq"): -1 when a comes before b,
// 0 when they are equal, +1 when a comes after b. IDs compare as numbers,
// part by part ("10-0" comes after "9-99").
func CompareIDs(a, b string) int {
	am, as, _ := strings.Cut(a, "-")
	bm, bs, _ := strings.Cut(b, "-")
	if c := cmp.Compare(len(am), len(bm)); c != 0 {
		return c
	}
	if c := strings.Compare(am, bm); c != 0 {
		return c
	}
	if c := cmp.Compare(len(as), len(bs)); c != 0 {
		return c
	}
	return strings.Compare(as, bs)
}
