package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

// goldenCase is a seeded configuration whose records are pinned by digest:
// a change to what a seed makes shows up here.
type goldenCase struct {
	name  string
	props map[string]string
}

// goldenCases: each quickstart in each format, without and with payloads.
var goldenCases = func() []goldenCase {
	var out []goldenCase
	keys := map[string]string{"users": "userid", "orders": "orderid", "pageviews": "pageid"}
	for _, q := range []string{"users", "orders", "pageviews"} {
		for _, format := range []string{formatStruct, formatRaw} {
			for _, size := range []string{"0", "300", "1024"} {
				out = append(out, goldenCase{q + "/" + format + "/" + size, map[string]string{topicKey: "t",
					quickstartKey: q, formatKey: format, recordSizeKey: size, keyFieldKey: keys[q], seedKey: "1"}})
			}
		}
	}
	return out
}()

// recordsDigest hashes the keys and values of records 0 to n-1: raw ones as
// they are, structs as encoding/json writes them.
func recordsDigest(t testing.TB, props map[string]string, n int64) string {
	g := newGenerator(mustSettings(t, props))
	h := sha256.New()
	var b []byte
	for seq := range n {
		_, k, _, v := g.record(seq)
		b = b[:0]
		switch k := k.(type) {
		case data.Raw:
			b = append(b, k...)
		default:
			b = append(b, keyText(k)...)
		}
		b = append(b, '\t')
		if raw, ok := v.(data.Raw); ok {
			b = append(b, raw...)
		} else {
			js, err := json.Marshal(plain(v))
			if err != nil {
				t.Fatal(err)
			}
			b = append(b, js...)
		}
		b = append(b, '\n')
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// goldenDigests are recordsDigest(20000) of goldenCases, taken before raw
// records were written straight to JSON; that change kept them all.
var goldenDigests = map[string]string{
	"users/struct/0":        "32c012eb3b02fbe5b2b582cb22b90dbe50c8b4837c310b296abe3b8e3072dab8",
	"users/struct/300":      "cc84a25f27702736a863bef90a3544b959f17ec0e3a27a7b0b06dbab7a8844d4",
	"users/struct/1024":     "9136d6368ba6a8795acf8ba821cd6d63aa6051281d4de7d631832ca0ffd2e7fa",
	"users/raw/0":           "23f95ceebb2b23077376345bcfa553f4bd18da061960c023638364583db5036b",
	"users/raw/300":         "2bf66417195ea7dfd08e205086655ef6ca3f30eb18e2a66b6030ae54737e717f",
	"users/raw/1024":        "1d00499eaef63f331a58d529f0ab5532abc43c4396abf67b7c6a2dbac0b71b50",
	"orders/struct/0":       "37a7ef7a2e0a4fc48f63b2759b6fa20f8c50834378991d0a04600a24d6bde016",
	"orders/struct/300":     "e5c6c5edc562e25f5abd805f9f8ecf78656d6626b2aaecadf5612618536f68a9",
	"orders/struct/1024":    "09879d1c3f29145eb0381dba3d38f3d41753f200247258053c0fb577352abb45",
	"orders/raw/0":          "aafe421a6a0e098201c0b9c59684417915d2fcb6d94773d5b37a2dde40908f03",
	"orders/raw/300":        "7a794c3251ad4880a68cf417293ec2089771bcf15aa725e6b473a4bdfdbe9ca8",
	"orders/raw/1024":       "7f54c7ef188d5cdb76e7c155b8bc0d6f6de5a17123239997ea0812afcf13b4f4",
	"pageviews/struct/0":    "9ef939b9cc13e15169c0ffa1e5d1932f270fabeccf5cf3045be3da1b4fbf047e",
	"pageviews/struct/300":  "a5b09b7fb6a8db890d4ab4cecfb1e8d2cd431b31896f5dc3a60a7cf014293947",
	"pageviews/struct/1024": "5de775c32ef04a0ea8e815a2e94d94b1eadf551c91e1a05f8f2d1ccc06dcddf4",
	"pageviews/raw/0":       "6a2a8aafea76c6872bf801edfec61ba75faea46ce8d2221ebd8cecc8aff11720",
	"pageviews/raw/300":     "42865aa9f19e2c3d42122e77282b558a4f5b7cb3ef5996be4d8d86e73b25fc43",
	"pageviews/raw/1024":    "eabfb51e492edf40539cf9294d8e31ccd5a62f033c916d136c77a560f11a0fd8",
}

// A seed keeps making the same records, in both formats.
func TestSeededRecordsAreUnchanged(t *testing.T) {
	if len(goldenCases) != len(goldenDigests) {
		t.Fatalf("%d cases, %d digests", len(goldenCases), len(goldenDigests))
	}
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			if got := recordsDigest(t, c.props, 20000); got != goldenDigests[c.name] {
				t.Errorf("digest %s, want %s: seed 1 makes other records than it did", got, goldenDigests[c.name])
			}
		})
	}
}
