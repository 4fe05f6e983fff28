package porchsim

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
	s.store.Lock()
	defer s.store.Unlock()
	return s.store.DeliveredLocked(resource, unknown)
}
