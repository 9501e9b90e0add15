// Package objmeta reads the object metadata of whatever an informer delivers
// to its event handlers, tombstones included, for the packages that judge
// events (pkg/predicate) and watch them (pkg/diagnose).
//
// The guide that uses it: docs/troubleshooting.md.
package objmeta
