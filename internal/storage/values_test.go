package storage

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"
)

// upper is a Values that stores values upper-cased and refuses to read values starting "!".
type upper struct{}

func (upper) FromStorage(key string, stored []byte) ([]byte, error) {
	if bytes.HasPrefix(stored, []byte("!")) {
		return nil, errors.New("unreadable")
	}
	return bytes.ToLower(stored), nil
}

func (upper) ToStorage(key string, value []byte) ([]byte, error) { return bytes.ToUpper(value), nil }

var _ Values = upper{}

// Every value read or written goes through the Store's Values; a value they cannot read is
// reported as corrupt, naming its key, by Get, and flagged in lists and watches.
func TestValuesAreAppliedToEveryReadAndWrite(t *testing.T) {
	ctx := context.Background()
	b, err := OpenEmbedded(ctx, t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s := NewStore(b.Client)
	s.UseValues(upper{})
	events, _ := s.Watch(ctx, "/v/", 0)

	if _, err := s.Create(ctx, "/v/a", []byte("one")); err != nil {
		t.Fatal(err)
	}
	raw, err := b.Client.Get(ctx, "/v/a")
	if err != nil || string(raw.Kvs[0].Value) != "ONE" {
		t.Fatalf("etcd holds %v (%v), want ONE", raw.Kvs, err)
	}
	if kv, _, err := s.Get(ctx, "/v/a", 0); err != nil || string(kv.Value) != "one" {
		t.Errorf("Get = %q, %v; want one", kv.Value, err)
	}
	if _, err := b.Client.Put(ctx, "/v/b", "!garbage"); err != nil {
		t.Fatal(err)
	}
	_, _, err = s.Get(ctx, "/v/b", 0)
	var corrupt *CorruptError
	if !errors.As(err, &corrupt) || corrupt.Key != "/v/b" || !errors.Is(err, ErrCorrupt) {
		t.Errorf("Get of an unreadable value: %v, want a CorruptError naming /v/b", err)
	}
	list, err := s.List(ctx, "/v/", ListOptions{})
	if err != nil || len(list.Items) != 2 || string(list.Items[0].Value) != "one" || list.Items[0].Corrupt != nil || list.Items[1].Corrupt == nil {
		t.Errorf("List = %+v, %v; want one readable and one corrupt value", list.Items, err)
	}
	for want := 2; want > 0; {
		select {
		case batch := <-events:
			for _, e := range batch.Events {
				want--
				if (e.KV.Key == "/v/a") != (e.KV.Corrupt == nil) {
					t.Errorf("watch event %+v", e)
				}
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no watch events")
		}
	}
}
