// Package pairkey lets this module's packages build a pairlimit.Pair from
// a business phone number ID and a recipient they have already parsed
// (internal/phone), without parsing them again and without an exported
// name in pairlimit that no user could call. pairlimit sets Of when it is
// initialised, which Go does before any package that imports pairlimit.
package pairkey

// Of holds pairlimit's func(from uint64, to phone.Recipient) pairlimit.Pair
// (the type cannot be named here: pairlimit imports this package). A
// caller asserts it once, at its own initialisation:
//
//	var pairOf = pairkey.Of.(func(uint64, phone.Recipient) pairlimit.Pair)
var Of any
