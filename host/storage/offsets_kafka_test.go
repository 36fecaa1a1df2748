package storage

import (
	"testing"
)

func (k *testKafka) startOffsets(topic string) *KafkaOffsetStore {
	k.t.Helper()
	s := NewKafkaOffsetStore(LogConfig{Topic: topic, ClientOpts: k.opts})
	if err := s.Start(testCtx(k.t)); err != nil {
		k.t.Fatal(err)
	}
	k.t.Cleanup(s.Close)
	return s
}

func TestKafkaOffsetStoreRoundTripAndRecords(t *testing.T) {
	k := newTestKafka(t)
	k.createTopic("connect-offsets", 25, "compact")
	ctx := testCtx(t)
	a := k.startOffsets("connect-offsets")
	if err := a.Set(ctx, "file-src", []OffsetEntry{
		{Partition: []byte(`{"filename":"/data/in.txt"}`), Offset: []byte(`{"position":30}`)},
		{Partition: []byte(`{ "table" : "t", "db": "d" }`), Offset: []byte(`{"lsn": 12345678901234567890, "ok": true}`)},
	}); err != nil {
		t.Fatal(err)
	}
	if err := a.Set(ctx, "other", []OffsetEntry{{Partition: []byte(`{"p":1}`), Offset: []byte(`{"o":1}`)}}); err != nil {
		t.Fatal(err)
	}
	// Delete one partition of "other" again and overwrite one of file-src.
	if err := a.Set(ctx, "other", []OffsetEntry{{Partition: []byte(`{"p":1}`)}}); err != nil {
		t.Fatal(err)
	}
	if err := a.Set(ctx, "file-src", []OffsetEntry{{Partition: []byte(`{"filename":"/data/in.txt"}`), Offset: []byte(`{"position":31}`)}}); err != nil {
		t.Fatal(err)
	}

	// The records on the topic are Kafka Connect's, byte for byte, each on
	// the partition Java's default partitioner picks for its key.
	want := []struct{ key, value string }{
		{`["file-src",{"filename":"/data/in.txt"}]`, `{"position":30}`},
		{`["file-src",{"db":"d","table":"t"}]`, `{"lsn":12345678901234567890,"ok":true}`},
		{`["other",{"p":1}]`, `{"o":1}`},
		{`["other",{"p":1}]`, "<null>"},
		{`["file-src",{"filename":"/data/in.txt"}]`, `{"position":31}`},
	}
	recs := k.readAll("connect-offsets")
	if len(recs) != len(want) {
		t.Fatalf("%d records on the topic, want %d", len(recs), len(want))
	}
	found := map[string]int{}
	for _, r := range recs {
		v := string(r.Value)
		if r.Value == nil {
			v = "<null>"
		}
		found[string(r.Key)+" = "+v]++
		if p := javaPartition(r.Key, 25); r.Partition != p {
			t.Errorf("key %s on partition %d, Java's partitioner says %d", r.Key, r.Partition, p)
		}
	}
	for _, w := range want {
		if found[w.key+" = "+w.value] != 1 {
			t.Errorf("record %s = %s not on the topic once; have %v", w.key, w.value, found)
		}
	}

	// A fresh store (another worker starting) sees the final state.
	b := k.startOffsets("connect-offsets")
	all, err := b.All(ctx, "file-src")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || string(all[0].Partition) != `{"db":"d","table":"t"}` || string(all[0].Offset) != `{"lsn":12345678901234567890,"ok":true}` ||
		string(all[1].Partition) != `{"filename":"/data/in.txt"}` || string(all[1].Offset) != `{"position":31}` {
		t.Fatalf("fresh store, file-src: %q", all)
	}
	got, err := b.Get(ctx, "file-src", [][]byte{[]byte(`{"table":"t","db":"d"}`), []byte(`{"filename":"/nope"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || string(got[`{"db":"d","table":"t"}`]) != `{"lsn":12345678901234567890,"ok":true}` {
		t.Fatalf("Get with unsorted partition keys: %q", got)
	}
	if other, _ := b.All(ctx, "other"); len(other) != 0 {
		t.Fatalf("tombstoned partition still listed: %q", other)
	}
	if c := b.Connectors(); len(c) != 1 || c[0] != "file-src" {
		t.Fatalf("connectors %v", c)
	}

	// Get reads to the end first: a write by the other store is seen at once.
	if err := a.Set(ctx, "file-src", []OffsetEntry{{Partition: []byte(`{"filename":"/data/in.txt"}`), Offset: []byte(`{"position":99}`)}}); err != nil {
		t.Fatal(err)
	}
	got, err = b.Get(ctx, "file-src", [][]byte{[]byte(`{"filename":"/data/in.txt"}`)})
	if err != nil || string(got[`{"filename":"/data/in.txt"}`]) != `{"position":99}` {
		t.Fatalf("Get after another worker's write: %q %v", got, err)
	}
}

func TestKafkaOffsetStoreReadsJavaRecords(t *testing.T) {
	// Records as a Java worker writes them: partition maps in HashMap order
	// (not sorted), Jackson's escaping, a null partition map, a JSON null
	// value, and keys that are not offsets at all.
	k := newTestKafka(t)
	k.createTopic("connect-offsets", 1, "compact")
	k.produce("connect-offsets", 0,
		[2]string{`["jdbc-src",{"table":"users","protocol":"1"}]`, `{"incrementing":42,"timestamp_nanos":0}`},
		[2]string{`["jdbc-src",{"table":"orders","protocol":"1"}]`, `{"incrementing":7}`},
		[2]string{`["jdbc-src",{"protocol":"1","table":"orders"}]`, `{"incrementing":8}`}, // same partition, other order: wins
		[2]string{`["mirror",null]`, `{"offset":1}`},
		[2]string{`["esc",{"path":"a<b>&c\u0001\u2028é"}]`, `{"pos":1.5}`},
		[2]string{`["gone",{"p":"x"}]`, `{"pos":1}`},
		[2]string{`["gone",{"p":"x"}]`, `null`},
		[2]string{`not json`, `{"x":1}`},
		[2]string{`["only-one-element"]`, `{"x":1}`},
	)
	s := k.startOffsets("connect-offsets")
	ctx := testCtx(t)
	got, err := s.Get(ctx, "jdbc-src", [][]byte{[]byte(`{"protocol":"1","table":"users"}`), []byte(`{"table":"orders","protocol":"1"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if string(got[`{"protocol":"1","table":"users"}`]) != `{"incrementing":42,"timestamp_nanos":0}` ||
		string(got[`{"protocol":"1","table":"orders"}`]) != `{"incrementing":8}` || len(got) != 2 {
		t.Fatalf("jdbc-src offsets: %q", got)
	}
	if all, _ := s.All(ctx, "mirror"); len(all) != 1 || string(all[0].Partition) != "null" {
		t.Fatalf("null partition map: %q", all)
	}
	all, _ := s.All(ctx, "esc")
	if len(all) != 1 || string(all[0].Partition) != "{\"path\":\"a<b>&c\\u0001\u2028é\"}" {
		t.Fatalf("escaped partition canonicalized to %q", all)
	}
	// Written back, the key is exactly the bytes Jackson wrote.
	if key := OffsetKey("esc", all[0].Partition); string(key) != "[\"esc\",{\"path\":\"a<b>&c\\u0001\u2028é\"}]" {
		t.Fatalf("key %s", key)
	}
	if gone, _ := s.All(ctx, "gone"); len(gone) != 0 {
		t.Fatalf("JSON null value kept: %q", gone)
	}
	if c := s.Connectors(); len(c) != 3 {
		t.Fatalf("connectors %v: invalid keys must be skipped", c)
	}
}
