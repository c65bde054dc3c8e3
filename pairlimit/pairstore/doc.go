// Package pairstore is for implementers of a [Store], which
// [github.com/wapace/wapace/pairlimit.WithStore] takes: the interface, the
// per-pair [State] a store keeps, the pure decision functions over it that
// every store applies (one per Store method), and the [Ticket] a
// reservation is given back with. A user of the pair limiter passes a
// store to WithStore and otherwise never needs
// it; package redisstore is an implementation, and
// [github.com/wapace/wapace/pairlimit/pairlimittest.TestStore] proves one
// against the same model.
//
// # Errors
//
// Nothing here returns an error: a Store's own failures are wrapped by the
// limiter in an error that matches [github.com/wapace/wapace/pairlimit.ErrStore].
package pairstore
