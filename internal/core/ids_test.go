package core

import "testing"

func TestCompareIDs(t *testing.T) {
	ordered := []string{"0-0", "0-1", "1-0", "9-99", "10-0", "10-2", "10-10", "1700000000000-0", "1700000000000-1"}
	for i := range ordered {
		for j := range ordered {
			got := CompareIDs(ordered[i], ordered[j])
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got != want {
				t.Fatalf("CompareIDs(%s, %s) = %d, want %d", ordered[i], ordered[j], got, want)
			}
		}
	}
}
