// Package reflector holds the parts of leanstore's list/watch loop that need
// nothing of pkg/leanstore: the record of what client-go's reflector has been
// handed and the re-list diff against it (Handed, Record), the pacer that
// bounds the heap during a list (Pacer), and the retry state that lists and
// watches share (RetryState, with its BackoffState). They report through
// interfaces (Reporter, PaceReporter) that leanstore's tracker implements;
// nothing here imports pkg/leanstore.
package reflector
