// Package reflector holds the parts of leanstore's list/watch loop that need
// nothing of pkg/leanstore: the record of what client-go's reflector has been
// handed and the re-list diff against it (Handed, Record), and the pacer that
// bounds the heap during a list (Pacer), which reports through PaceReporter.
// pkg/leanstore builds them and reads their reports; nothing here imports it.
package reflector
