package storage

import "testing"

// A source partition holding a character beyond U+FFFF gets the key bytes a
// Java worker writes for it (Jackson escapes each UTF-16 surrogate), so both
// workers address one record on the offsets topic, in the same partition.
func TestOffsetKeyEscapesNonBMPAsJackson(t *testing.T) {
	p, err := CanonicalJSON([]byte(`{"filename":"/data/😀é.txt"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := `["conn\uD83D\uDE00",{"filename":"/data/\uD83D\uDE00é.txt"}]`
	if got := string(OffsetKey("conn😀", p)); got != want {
		t.Fatalf("key %s, want %s", got, want)
	}
	conn, part, err := ParseOffsetKey([]byte(want))
	if err != nil || conn != "conn😀" || string(part) != string(p) {
		t.Fatalf("ParseOffsetKey = %q, %s, %v", conn, part, err)
	}
}
