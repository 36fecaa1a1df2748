package convert

import (
	"container/list"
	"sync"
)

// lru is a small mutex-guarded least-recently-used cache, JsonConverter's
// schemas.cache.size caches. A size of zero or less disables it, as Kafka's
// LRUCache then evicts every entry on insert.
type lru[K comparable, V any] struct {
	mu  sync.Mutex
	max int
	ll  list.List // front = most recent; elements hold *lruEntry
	m   map[K]*list.Element
}

type lruEntry[K comparable, V any] struct {
	k K
	v V
}

func newLRU[K comparable, V any](max int) *lru[K, V] {
	return &lru[K, V]{max: max, m: make(map[K]*list.Element)}
}

func (l *lru[K, V]) get(k K) (V, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.m[k]
	if !ok {
		var zero V
		return zero, false
	}
	l.ll.MoveToFront(e)
	return e.Value.(*lruEntry[K, V]).v, true
}

// getBytes looks a string-keyed cache up by bytes without allocating a key.
func getBytes[V any](l *lru[string, V], k []byte) (V, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.m[string(k)]
	if !ok {
		var zero V
		return zero, false
	}
	l.ll.MoveToFront(e)
	return e.Value.(*lruEntry[string, V]).v, true
}

func (l *lru[K, V]) put(k K, v V) {
	if l.max <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.m[k]; ok {
		e.Value.(*lruEntry[K, V]).v = v
		l.ll.MoveToFront(e)
		return
	}
	l.m[k] = l.ll.PushFront(&lruEntry[K, V]{k: k, v: v})
	for l.ll.Len() > l.max {
		old := l.ll.Back()
		l.ll.Remove(old)
		delete(l.m, old.Value.(*lruEntry[K, V]).k)
	}
}

func (l *lru[K, V]) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ll.Len()
}
