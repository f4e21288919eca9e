package core_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/leatdev/leat/internal/core"
)

type textRecord struct {
	Name  string            `json:"name"`
	Tags  map[string]string `json:"tags,omitempty"`
	Items []*string         `json:"items,omitempty"`
	Raw   json.RawMessage   `json:"raw,omitempty"`
	Bytes []byte            `json:"bytes,omitempty"`
}

// The JSON codec refuses a record with a string that is not UTF-8, however
// deep (encoding/json would replace its bad bytes with U+FFFD and the reader
// would get other text), and raw JSON holding an escaped lone surrogate or
// an object's name twice (readers would get U+FFFD, or one of the values);
// a U+FFFD of the text itself, a \ufffd escape of raw JSON and bytes
// (base64) are not that.
func TestJSONCodecRefusesLossyStrings(t *testing.T) {
	for raw, says := range map[string]string{
		`{"a":1,"b":{"c":1,"c":2}}`: `field "raw.b.c" appears twice`,
		`["\ud800"]`:                `\ud800 is half of a UTF-16 surrogate pair`,
	} {
		r := textRecord{Name: "ok", Raw: json.RawMessage(raw)}
		if _, err := core.JSON.Marshal(&r); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("raw %s: %v, want refused saying %q", raw, err, says)
		}
	}
	bad := "b\xffd"
	for _, r := range []textRecord{
		{Name: "a\xff"},
		{Name: "ok", Tags: map[string]string{"k": bad}},
		{Name: "ok", Tags: map[string]string{bad: "v"}},
		{Name: "ok", Items: []*string{nil, &bad}},
	} {
		if _, err := core.JSON.Marshal(&r); err == nil || !strings.Contains(err.Error(), "is not valid UTF-8") {
			t.Errorf("%+v: %v, want refused", r, err)
		}
	}
	for _, r := range []textRecord{
		{Name: "a\uFFFDb"},
		{Name: `a\ufffd`, Raw: json.RawMessage(`"x\ufffd"`)},
		{Name: "ok", Bytes: []byte{0xff, 0xfe}},
	} {
		b, err := core.JSON.Marshal(&r)
		if err != nil {
			t.Errorf("%+v: %v", r, err)
			continue
		}
		var back textRecord
		if err := core.JSON.Unmarshal(b, &back); err != nil || back.Name != r.Name {
			t.Errorf("%+v: back %+v, %v", r, back, err)
		}
	}
}
