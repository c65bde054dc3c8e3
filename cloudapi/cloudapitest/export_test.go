package cloudapitest

// PairStates returns how many pair states s keeps.
func PairStates(s *Server) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pairs.m)
}

// TierEntries returns how many recipients s keeps for the tier rule.
func TierEntries(s *Server) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.tier)
}

// RecordN records n accepted requests, as many messages would, without
// serving them: a cheap way to reach the default history's bound.
func RecordN(s *Server, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.record(Request{Accepted: true, Status: 200, Body: []byte("{}")})
	}
}
