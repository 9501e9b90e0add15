// Package reflector is leanstore's list/watch loop: ListWatch, the
// cache.ListerWatcher that client-go's reflector runs, configured by a Config
// that pkg/leanstore builds from its options. Beside it are the parts the loop
// is made of: the record of what client-go's reflector has been handed and the
// re-list diff against it (Handed, Record), the pacer that bounds the heap
// during a list (Pacer), and the retry state that lists and watches share
// (RetryState, with its BackoffState). The loop makes its requests through a
// Source (RawSource for the lean protobuf decoder), keeps one replica's objects
// through a Shard, learns with the other informers of its factory whether the
// server refuses streaming lists (StreamingState), and reports through
// interfaces (Reporter, PaceReporter) that leanstore's status reporter implements;
// nothing here imports pkg/leanstore.
package reflector
