// Package backoff is the one retry schedule of the library: the delay between
// attempts after failures, growing from Initial by Factor up to Cap, with
// random extra (jitter) so that clients that failed together do not retry in
// step, and back to Initial after a success or after ResetAfter without a
// failure. pkg/leanstore paces failed lists and watches with it,
// pkg/reconcile paces failing keys, pkg/retry paces retried requests, and the
// resilience harness derives from it the most requests a persistent fault
// may cost (MaxAttempts). docs/errors-and-backoff.md shows the schedule at
// work under each fault.
//
// The guide that uses it: docs/errors-and-backoff.md.
//
//	b := backoff.Default() // client-go's reflector: 800 ms, ×2, 30 s, jitter 1.0, reset after 2 min
//	s := backoff.NewSchedule(b)
//	for {
//		if err := try(ctx); err == nil {
//			s.Reset()
//			return nil
//		}
//		if err := backoff.Sleep(ctx, s.Next()); err != nil {
//			return err // ctx ended
//		}
//	}
//
// A Backoff is a value: its methods are pure (Step, Delay, MaxAttempts,
// Validate). A Schedule holds one caller's failures in a row and is safe for
// concurrent use.
package backoff
