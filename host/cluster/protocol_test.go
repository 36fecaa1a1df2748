package cluster

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// unhex reads hex with spaces and "|" comments-as-separators.
func unhex(t *testing.T, s string) []byte {
	t.Helper()
	var clean strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		clean.WriteString(strings.ReplaceAll(line, " ", ""))
	}
	b, err := hex.DecodeString(clean.String())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func hexOf(s string) string { return hex.EncodeToString([]byte(s)) }

var goldenAssignment = WireAssignment{
	Version: 1, Error: NoError, Leader: "L", LeaderURL: "http://l:8083", ConfigOffset: 5,
	Assigned: work([]string{"c"}, tid("c", 0)),
	Revoked:  work(nil, tid("d", 1)),
	DelayMs:  300,
}

// Hand-written from the layout in the anchor doc (§3.3), field by field.
var goldenAssignmentHex = `
0001                         # version 1
0000                         # error NO_ERROR
0001 ` + hexOf("L") + `      # leader
000d ` + hexOf("http://l:8083") + ` # leader url
0000000000000005             # config offset
00000001                     # assignment: 1 entry
  0001 ` + hexOf("c") + `    #   connector c
  00000002 ffffffff 00000000 #   tasks [-1 (the connector), 0]
00000001                     # revoked: 1 entry
  0001 ` + hexOf("d") + `    #   connector d
  00000001 00000001          #   tasks [1]
0000012c                     # delay 300 ms
`

func TestAssignmentGolden(t *testing.T) {
	want := unhex(t, goldenAssignmentHex)
	got := AppendAssignment(nil, goldenAssignment)
	if !bytes.Equal(got, want) {
		t.Fatalf("encoded\n%x\nwant\n%x", got, want)
	}
	back, err := DecodeAssignment(want)
	if err != nil {
		t.Fatal(err)
	}
	if !sameWire(back, goldenAssignment) {
		t.Fatalf("decoded %+v", back)
	}
}

func sameWire(a, b WireAssignment) bool {
	return a.Version == b.Version && a.Error == b.Error && a.Leader == b.Leader && a.LeaderURL == b.LeaderURL &&
		a.ConfigOffset == b.ConfigOffset && a.Assigned.String() == b.Assigned.String() &&
		a.Revoked.String() == b.Revoked.String() && a.DelayMs == b.DelayMs
}

func TestMetadataGolden(t *testing.T) {
	m := Metadata{Version: 2, URL: "http://w:8083", ConfigOffset: 7}
	want := unhex(t, `
0002                                # version 2 (sessioned)
000d `+hexOf("http://w:8083")+`     # url
0000000000000007                    # config offset
ffffffff                            # allocation: null (never assigned)
`)
	if got := AppendMetadata(nil, m); !bytes.Equal(got, want) {
		t.Fatalf("encoded %x want %x", got, want)
	}

	// With a current assignment: its encoding, length-prefixed.
	cur := goldenAssignment
	cur.Revoked, cur.DelayMs = Work{}, 0
	m.Current = &cur
	blob := AppendAssignment(nil, cur)
	want = append(want[:len(want)-4], 0, 0, 0, byte(len(blob)))
	want = append(want, blob...)
	got := AppendMetadata(nil, m)
	if !bytes.Equal(got, want) {
		t.Fatalf("encoded %x want %x", got, want)
	}
	back, err := DecodeMetadata(got)
	if err != nil {
		t.Fatal(err)
	}
	if back.URL != m.URL || back.ConfigOffset != 7 || back.Version != 2 || back.Current == nil || !sameWire(*back.Current, cur) {
		t.Fatalf("decoded %+v", back)
	}
}

func TestEncodingOrderFollowsKafkaConnect(t *testing.T) {
	// Connector instances first (task -1 leading), then tasks joined to
	// their connector's entry or appended in a new one.
	a := WireAssignment{Version: 2, Assigned: work([]string{"b"}, tid("a", 1), tid("a", 0), tid("b", 3))}
	got := AppendAssignment(nil, a)
	want := unhex(t, `
0002 0000 0000 0000 0000000000000000
00000002
  0001 `+hexOf("b")+` 00000002 ffffffff 00000003
  0001 `+hexOf("a")+` 00000002 00000000 00000001
00000000
00000000
`)
	if !bytes.Equal(got, want) {
		t.Fatalf("encoded\n%x\nwant\n%x", got, want)
	}
}

func TestDecodeTolerance(t *testing.T) {
	full := AppendAssignment(nil, goldenAssignment)
	// Up to the assignment array only, as a v0-shaped body under v1.
	cut := len(full) - (4 + 2 + 1 + 4 + 4) - 4
	short, err := DecodeAssignment(full[:cut])
	if err != nil {
		t.Fatal(err)
	}
	if !short.Revoked.Empty() || short.DelayMs != 0 || short.Assigned.String() != goldenAssignment.Assigned.String() {
		t.Fatalf("missing trailing fields: %+v", short)
	}
	// Revoked present, delay missing.
	noDelay, err := DecodeAssignment(full[:len(full)-4])
	if err != nil || noDelay.DelayMs != 0 || noDelay.Revoked.String() != goldenAssignment.Revoked.String() {
		t.Fatalf("no delay: %+v %v", noDelay, err)
	}
	// Bytes after the known fields (a later version) are ignored.
	later := append(bytes.Clone(full), 1, 2, 3)
	later[1] = 3
	if v, err := DecodeAssignment(later); err != nil || v.DelayMs != 300 || v.Version != 3 {
		t.Fatalf("later version: %+v %v", v, err)
	}
	// Null arrays read as empty.
	nulls := unhex(t, `0001 0000 0000 0000 0000000000000001 ffffffff ffffffff 00000000`)
	if v, err := DecodeAssignment(nulls); err != nil || !v.Assigned.Empty() || !v.Revoked.Empty() {
		t.Fatalf("null arrays: %+v %v", v, err)
	}
	for name, b := range map[string][]byte{
		"empty":           nil,
		"half a field":    full[:len(full)-2],
		"negative ver":    unhex(t, `ffff 0000`),
		"huge array":      unhex(t, `0001 0000 0000 0000 0000000000000001 7fffffff`),
		"truncated entry": full[:30],
	} {
		if _, err := DecodeAssignment(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err %v", name, err)
		}
	}
	if _, err := DecodeMetadata(unhex(t, `0001 0003 6162`)); !errors.Is(err, ErrMalformed) {
		t.Errorf("truncated metadata: %v", err)
	}
	// v1 metadata without its allocation field: null.
	m, err := DecodeMetadata(unhex(t, `0001 0001 61 0000000000000009`))
	if err != nil || m.Current != nil || m.ConfigOffset != 9 || m.URL != "a" {
		t.Fatalf("metadata without allocation: %+v %v", m, err)
	}
}

// kmsg ships ConnectMemberMetadata and ConnectMemberAssignment. The metadata
// matches Kafka Connect's; the assignment does not: kmsg writes task ids as
// INT16 where Kafka Connect writes INT32, so this package encodes itself.
// If kmsg is ever fixed this test fails, and the encoders could go.
func TestKmsgConnectEncodings(t *testing.T) {
	ours := AppendMetadata(nil, Metadata{Version: 1, URL: "http://w:8083", ConfigOffset: 7})
	var km kmsg.ConnectMemberMetadata
	if err := km.ReadFrom(ours); err != nil || km.URL != "http://w:8083" || km.ConfigOffset != 7 || km.CurrentAssignment != nil {
		t.Fatalf("kmsg reads our metadata as %+v (%v)", km, err)
	}

	ka := kmsg.ConnectMemberAssignment{
		Version: 1, Leader: "L", LeaderURL: "http://l:8083", ConfigOffset: 5,
		Assignment:     []kmsg.ConnectMemberAssignmentAssignment{{Connector: "c", Tasks: []int16{-1, 0}}},
		Revoked:        []kmsg.ConnectMemberAssignmentRevoked{{Connector: "d", Tasks: []int16{1}}},
		ScheduledDelay: 300,
	}
	theirs := ka.AppendTo(nil)
	want := unhex(t, goldenAssignmentHex)
	if bytes.Equal(theirs, want) {
		t.Fatal("kmsg now encodes Kafka Connect assignments exactly; consider using it")
	}
	if len(want)-len(theirs) != 2*3 { // three task ids, two bytes short each
		t.Fatalf("kmsg differs by %d bytes, expected only the task id width", len(want)-len(theirs))
	}
}
