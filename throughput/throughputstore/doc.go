// Package throughputstore is for implementers of a [Store], which
// [github.com/wapace/wapace/throughput.WithStore] takes: the interface, the
// reference in-memory store ([NewMemoryStore]), the token bucket
// ([BucketState]) and the set of counted recipients ([TierState]) a store
// keeps per key, the pure decision functions over them that every store
// applies (one per Store method), and the tickets ([BucketTicket],
// [TierTicket]) a reservation or an admission is given back with. A user
// of the throughput limits passes a store to WithStore and otherwise never
// needs this package; package redisstore is an implementation, and
// [github.com/wapace/wapace/throughput/throughputtest.TestStore] proves one
// against the same model.
//
// # Errors
//
// Nothing here returns an error: a Store's own failures are wrapped by the
// limits in an error that
// matches [github.com/wapace/wapace/throughput.ErrStore].
package throughputstore
