package porchsim

import (
	"k8s.io/apimachinery/pkg/watch"
)

// DeliveredResourceVersion is the resourceVersion of the newest change of a
// resource ("packagerevisions", "packagevariants", "packagevariantsets",
// "repositories") that watches may deliver now (0 when there was none). A
// tool that wants to know whether an informer has caught up compares it with
// the newest resourceVersion the informer's handlers have seen.
//
// An informer that started after an object was deleted never hears of the
// deletion: its list does not hold the object. unknown, when not nil, names
// the objects a handler never knew; the newest deletions of those are passed
// over (with their earlier changes), so that such a handler is not waited
// for in vain.
func (s *Sim) DeliveredResourceVersion(resource string, unknown func(namespace, name string) bool) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.logs[resource]
	if l == nil {
		return 0
	}
	// gone are the objects, deleted last, that the handler never knew:
	// their older changes are passed over too.
	var gone map[objectKey]bool
	for i := len(l.events) - 1; i >= 0; i-- {
		e := l.events[i]
		if e.rv > s.watermark {
			continue
		}
		if unknown != nil {
			m := mustAccessor(e.obj)
			key := objectKey{m.GetNamespace(), m.GetName()}
			if gone[key] {
				continue
			}
			if e.typ == watch.Deleted && unknown(key.namespace, key.name) {
				if gone == nil {
					gone = map[objectKey]bool{}
				}
				gone[key] = true
				continue
			}
		}
		return e.rv
	}
	return l.compacted
}
