// Package leakcheck checks that a test leaves no goroutine behind, with
// go.uber.org/goleak, while ignoring the connection goroutines that Go's HTTP
// transports keep for pooled connections: client-go shares transports between
// clients, so those outlive any one test by design. A leaked informer, reflector
// or watch still shows: its goroutines run client-go or cachetune code.
//
// The guide that uses it: README.md, "Layout" (every test package checks
// with it).
package leakcheck
