// Package objmeta reads the object metadata of whatever an informer delivers
// to its event handlers, tombstones included, for the packages that judge
// events (pkg/predicate) and watch them (pkg/diagnose); and it has Identity,
// the metadata of the stand-ins the informer's machinery keeps for objects it
// does not hold decoded (internal/reflector's records, internal/encstore's
// packed objects).
//
// The guide that uses it: docs/troubleshooting.md.
package objmeta
