package porchsim

// DeliveredResourceVersion is the resourceVersion of the newest change of a
// resource ("packagerevisions", "packagevariants", "packagevariantsets",
// "repositories") that watches may deliver now (0 when there was none). A
// tool that wants to know whether an informer has caught up compares it with
// the newest resourceVersion the informer's handlers have seen.
func (s *Sim) DeliveredResourceVersion(resource string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.logs[resource]
	if l == nil {
		return 0
	}
	for i := len(l.events) - 1; i >= 0; i-- {
		if l.events[i].rv <= s.watermark {
			return l.events[i].rv
		}
	}
	return l.compacted
}
