package mutants

import (
	"strings"
	"time"
)

// The commands that should catch the mutants.
var (
	// harness is the differential harness (internal/conformance) on one
	// program whose faults force re-lists inside the watch (watch-410), cut
	// watch streams resumed through a probe (watch-cut) and list bodies cut
	// at an item boundary (truncated-at-an-item): seed 3 draws them in the
	// order 410, cut, truncated, cut, 410, truncated, with random writes in
	// every step, against every leanstore factory and mode and client-go.
	// It compares every object's content, every event's old and new object,
	// the event streams with client-go's, and the keys and resourceVersions
	// with a fresh consistent LIST after each step (package conformance).
	harness = Command{
		Pkg: "./internal/conformance/", Run: "^TestConformance$",
		Env: []string{
			"CACHETUNE_CONFORMANCE_SEED=3",
			"CACHETUNE_CONFORMANCE_FAULTS=watch-410,watch-cut,truncated-at-an-item",
		},
		Timeout: 15 * time.Minute,
		// The test reports each broken check on a line of its own.
		Reason: `(?m)conformance_test\.go:\d+: ((?:step \d+ |the initial sync|at the end|leanstore/)\S.*)$`,
	}
	// harness5xx is the harness on a program whose every step answers the
	// Pods' lists and watches with 5xx while the writer writes: the
	// informers back off for more than a second, probe the server, and take
	// a probe's watch, whose first event the probe has read, when the fault
	// lifts (watch_probe.go). A single cut watch resumes without a probe.
	harness5xx = Command{
		Pkg: "./internal/conformance/", Run: "^TestConformance$",
		Env: []string{
			"CACHETUNE_CONFORMANCE_SEED=3",
			"CACHETUNE_CONFORMANCE_FAULTS=status-5xx",
		},
		Timeout: 15 * time.Minute,
		Reason:  harness.Reason,
	}
	// shardPackage is the shard filter's own tests, which need no API
	// server: the filter and the re-list diff after a rebalance
	// (internal/shardfilter, filter_test.go; the split of a list page and of
	// watch events is internal/reflector's, shard_decode_test.go).
	shardPackage = Command{Pkg: "./internal/shardfilter/", Run: "^TestShard", Short: true, Timeout: 5 * time.Minute,
		Reason: shardReason}
	// shardUnion is the harness's sharding program: replica processes split
	// the Pods while the writer writes, one is killed and one joins, and the
	// union of their stores must equal a fresh LIST, each object held once.
	shardUnion = Command{Pkg: "./internal/conformance/", Run: "^TestShardUnion$", Timeout: 15 * time.Minute,
		Reason: shardReason}
	// encstorePackage is the encoded store's own tests, which need no API
	// server: reads, the hot cache, Upsert, Replace and the indexes against
	// client-go's indexer (store_test.go, store_diff_test.go).
	encstorePackage = Command{Pkg: "./internal/encstore/", Run: ".", Short: true, Timeout: 5 * time.Minute}
	// encstoreRace is the encoded store's test of an update racing with
	// reads, under the race detector (concurrency_test.go).
	encstoreRace = Command{Pkg: "./internal/encstore/", Run: "^TestUpsertsOldObjectIsNotReadByOthers$", Short: true, Race: true, Timeout: 5 * time.Minute}
	// handedPackage is the handed set's own tests, which need no API server
	// (handed_sums_test.go: whose digests vouch for which version).
	handedPackage = Command{Pkg: "./internal/reflector/", Run: "^TestHanded", Short: true, Timeout: 5 * time.Minute}
	// closedStream is the contract test of a streaming list whose stream a
	// proxy closes early under JSON, against the real API server through the
	// fault proxy (pkg/leanstore, contract_test.go).
	closedStream = Command{Pkg: "./pkg/leanstore/", Run: "^TestClosedStreamingListIsNotARefusal$", Timeout: 5 * time.Minute}
	// pacerPackage is the heap bound's own tests, which need no API server
	// (internal/reflector, pace_test.go).
	pacerPackage = Command{Pkg: "./internal/reflector/", Run: "^TestPacer", Short: true, Timeout: 5 * time.Minute}
	// pacedIndexers is the test of the index functions leanstore gives
	// client-go (informer_index_test.go), which needs no API server.
	pacedIndexers = Command{Pkg: "./pkg/leanstore/", Run: "^TestPacedIndexers", Short: true, Timeout: 5 * time.Minute}
	// pacedHandlers is leanstore's test of the wrapper of the handlers it
	// gives client-go, which pass every call on and tick the heap bound for
	// each initial add (handlers_test.go).
	pacedHandlers = Command{Pkg: "./pkg/leanstore/", Run: "^TestPacedHandler", Short: true, Timeout: 5 * time.Minute}
	// unpackYields is the informer's test of its yields to a handler that
	// has fallen behind while it decodes packed objects (informer_test.go).
	unpackYields = Command{Pkg: "./internal/informer/", Run: "^TestUnpackYields", Short: true, Timeout: 5 * time.Minute}
	// shrinkPackage is the sharing and interning tests, which need no API
	// server.
	shrinkPackage = Command{Pkg: "./internal/shrink/", Run: ".", Short: true, Timeout: 5 * time.Minute}
	// wirePackage is the wire decoder's own tests, which need no API server.
	wirePackage = Command{Pkg: "./internal/wire/", Run: ".", Short: true, Timeout: 5 * time.Minute}
	// shardReason finds a failed check of either: the line of the test
	// file (filter_test.go, conformance's shard_test.go) that does not start
	// with a count (TestShardUnion's summary).
	shardReason = `(?m)(?:shard|filter)_test\.go:\d+: ([^\d\s].*)$`
)

// lines joins source lines: snippets span several lines of gofmt'ed code.
func lines(l ...string) string { return strings.Join(l, "\n") }

// Catalog is the planted defects of `make mutants`, each a bug a developer
// could plausibly write, that compiles, and that changes what a user of
// leanstore sees (a defect that costs only memory or time is no test's to
// catch here). The snippets are main's code: when the code they name
// changes, the mutant is reported as a suite error until it follows.
var Catalog = []Mutant{
	// The decoder peeks at an object's uid and resourceVersion to answer an
	// unchanged object with the cached one; comparing the uid alone (it
	// names the object, the version is what changes) answers every update
	// with the old version.
	{
		Name:   "decode-reuse-ignores-version",
		Where:  "internal/reflector/wire_caller.go: (*wireCaller).Cached",
		Breaks: "an updated object is answered with the cached older version (same uid): the cache keeps stale objects",
		Edits: []Edit{{File: "internal/reflector/wire_caller.go",
			Old: "if !ok || string(m.GetUID()) != string(id.UID) || m.GetResourceVersion() != string(id.ResourceVersion) {",
			New: "if !ok || string(m.GetUID()) != string(id.UID) {"}},
		Cmd: harness,
	},
	// A wrong field number in the protobuf walker: ObjectMeta's
	// managedFields is field 17; 14 is finalizers. The walker then strips
	// the finalizers from the encoded bytes (managedFields are still
	// removed from the decoded object by the shrink pipeline, which hides
	// half of the bug).
	{
		Name:   "decode-wrong-field-number",
		Where:  "internal/wire/envelope.go: metaManagedFields (used by stripEncoded)",
		Breaks: "the protobuf decoder drops field 14 (finalizers) where it means managedFields (17): cached Pods lose their finalizers",
		Edits: []Edit{{File: "internal/wire/envelope.go",
			Old: "metaManagedFields   = 17",
			New: "metaManagedFields   = 14"}},
		Cmd: harness,
	},
	// The list decoder refuses a body cut anywhere, even at an item
	// boundary; taking a list that has its metadata (field 1, written
	// first) as complete accepts a cut one as a shorter list, and a
	// re-list inside the watch then deletes every object past the cut.
	{
		Name:   "decode-accepts-truncated-list",
		Where:  "internal/wire/list.go: (*Decoder).listMessage",
		Breaks: "a list body cut at an item boundary is taken as a complete, shorter list: a re-list deletes the objects past the cut",
		Edits: []Edit{{File: "internal/wire/list.go",
			Old: "\t\t\tif lr.N != 0 {\n",
			New: "\t\t\tif lr.N != 0 && !sawMeta {\n"}},
		Cmd: harness,
	},
	// The shrink pipeline removes managedFields from objects the protobuf walker
	// did not strip (JSON: the dynamic informers, a server answering JSON);
	// an inverted nil check keeps them.
	{
		Name:   "strip-keeps-managed-fields",
		Where:  "internal/shrink/pipeline.go: (*Pipeline).Apply",
		Breaks: "managedFields are kept on objects decoded from JSON (dynamic informers): the cache holds what it promised to strip",
		Edits: []Edit{{File: "internal/shrink/pipeline.go",
			Old: "if p.ManagedFields && m.GetManagedFields() != nil {",
			New: "if p.ManagedFields && m.GetManagedFields() == nil {"}},
		Cmd: harness,
	},
	// Stripping an annotation copies the map without it; dropping the
	// whole map as soon as one key must go strips too much.
	{
		Name:   "strip-drops-every-annotation",
		Where:  "internal/shrink/pipeline.go: stripAnnotations",
		Breaks: "an object with the last-applied annotation loses all its other annotations too (JSON-decoded objects)",
		Edits: []Edit{{File: "internal/shrink/pipeline.go",
			Old: "\tif n == len(ann) {\n\t\tm.SetAnnotations(nil)",
			New: "\tif n > 0 {\n\t\tm.SetAnnotations(nil)"}},
		Cmd: harness,
	},
	// Interning reads a map's key and value side by side; a copy-paste slip
	// that interns the key twice stores every value as its key.
	{
		Name:   "intern-map-value-from-key",
		Where:  "internal/shrink/intern.go: (interner).internPlanAt, the map[string]string step",
		Breaks: "every label (and annotation) value of a typed object becomes its key (WithInterning, the default)",
		Edits: []Edit{{File: "internal/shrink/intern.go",
			Old: "kc, vc := t.internString(k), t.internString(v)",
			New: "kc, vc := t.internString(k), t.internString(k)"}},
		Cmd: harness,
	},
	// Sharing stores a map's rewritten entries again once its walk is done,
	// through one reused value variable; forgetting to set it stores the
	// previous entry's value (or the empty string) under the key.
	{
		Name:   "share-map-entry-loses-value",
		Where:  "internal/shrink/sharer.go: (*sharer).mapValue",
		Breaks: "a label (or annotation) whose key or value was made canonical gets another entry's value, or none (WithSharing)",
		Edits: []Edit{{File: "internal/shrink/sharer.go",
			Old: "\t\t\t\tstr.SetString(w.sv)\n",
			New: ""}},
		Cmd: harness,
	},
	// A share table keeps each struct type's fields and each type's
	// comparison plan in a small array by the type's identity; a slot
	// that answers without checking whose it is hands one type's fields
	// to another whose identity falls on the same slot.
	{
		Name:   "type-cache-ignores-type",
		Where:  "internal/shrink/fields.go: (*typeCache).get",
		Breaks: "a struct walked with another type's fields: a panic in the informer's goroutine, or strings interned that are unique to an object and parts compared by another type's plan (WithSharing, WithInterning)",
		Edits: []Edit{{File: "internal/shrink/fields.go",
			Old: "if s.id != id {",
			New: "if s.id == 0 {"}},
		Cmd: shrinkPackage,
	},
	// A map's walk keeps the entries it stores again in the share table's
	// scratch, past where it found it; a walk that stores them and leaves
	// them there hands them to the map it is nested in. The harness's
	// dynamic informer with sharing holds Pods as nested maps
	// (TestNestedMapsStoreTheirOwnEntries catches it too).
	{
		Name:   "share-map-writes-leak",
		Where:  "internal/shrink/sharer.go: (*sharer).mapValue",
		Breaks: "an unstructured object's nested map's interned entries are stored again in the map that holds it: the object gains keys it does not have (WithSharing on dynamic informers)",
		Edits: []Edit{{File: "internal/shrink/sharer.go",
			Old: "\t\ts.dropWrites(base)\n\t}\n\tif !top {",
			New: "\t}\n\tif !top {"}},
		Cmd: harness,
	},
	// The scratch is cleared when its entries are dropped: a table would
	// otherwise hold the parts of the last objects walked.
	{
		Name:   "share-scratch-kept",
		Where:  "internal/shrink/sharer.go: (*sharer).dropWrites",
		Breaks: "the share table keeps the values and strings of the maps it walked last alive until a later walk overwrites them",
		Edits: []Edit{{File: "internal/shrink/sharer.go",
			Old: "\tclear(t.writes[base:])\n",
			New: ""}},
		Cmd: shrinkPackage,
	},
	// The handed set makes its map at a first list's size; growing it one
	// key at a time is the garbage it used to add to the start-up peak.
	{
		Name:   "handed-grows-per-key",
		Where:  "internal/reflector/handed.go: (*Handed).Replace",
		Breaks: "a first list grows the handed set's map one key at a time: twice the allocations, garbage the start-up peak holds",
		Edits: []Edit{{File: "internal/reflector/handed.go",
			Old: "if n := len(items); n > v.sized && n > len(v.byHash) {",
			New: "if n := len(items); false && n > v.sized && n > len(v.byHash) {"}},
		Cmd: handedPackage,
	},
	// Resource lists are compared along the Quantity's plan without copying
	// their values (equalFlat); comparing only the amounts would take a
	// canonical list whose Quantities are written otherwise.
	{
		Name:   "share-quantities-by-amount",
		Where:  "internal/shrink/equalplan.go: (*eqPlan).equalFlat",
		Breaks: "resource lists whose Quantities have one amount but another written form (0.25 and 250m) compare equal: a Pod's requests or limits show another Pod's form (WithSharing)",
		Edits: []Edit{{File: "internal/shrink/equalplan.go",
			Old: "\t\t\tif *(*string)(x) != *(*string)(y) {\n\t\t\t\treturn false, true",
			New: "\t\t\tif false && *(*string)(x) != *(*string)(y) {\n\t\t\t\treturn false, true"}},
		Cmd: shrinkPackage,
	},
	// Sharing walks a MODIFIED object beside the version the cache holds and
	// takes the cached version's part where it is canonical and equal;
	// trusting the place without comparing keeps the old part.
	{
		Name:   "share-prev-without-compare",
		Where:  "internal/shrink/sharer.go: (*sharer).canonicalPrev",
		Breaks: "a changed part (labels, containers) that the cached version held canonical keeps the cached version's value: the cache shows the old labels or spec (WithSharing)",
		Edits: []Edit{{File: "internal/shrink/sharer.go",
			Old: "if e.n != n || (n >= 0 && prev.Len() != n) || !equalValues(v, prev) {",
			New: "if e.n != n || (n >= 0 && prev.Len() != n) {"}},
		Cmd: harness,
	},
	// The same for the cached version's own parts, taken after the new
	// version's parts are walked: without the comparison, every own part of
	// the old version (its status) stays.
	{
		Name:   "share-own-prev-without-compare",
		Where:  "internal/shrink/sharer.go: (*sharer).ownPrev",
		Breaks: "a changed part that only the cached version held (a Pod's status conditions, its IPs) keeps the cached version's value (WithSharing)",
		Edits: []Edit{{File: "internal/shrink/sharer.go",
			Old: "if dataPointer(v) == dataPointer(prev) || !equalValues(v, prev) {",
			New: "if dataPointer(v) == dataPointer(prev) {"}},
		Cmd: harness,
	},
	// Under sharing, a new version takes the top-level fields encoded as the
	// held version's were (a Pod's spec after a status patch) from the held
	// version instead of decoding them; taking them without comparing the
	// digests keeps the old spec after a change.
	{
		Name:   "take-field-without-digest",
		Where:  "internal/wire/unchanged.go: (*unchanged).skip",
		Breaks: "a changed spec (a new image) keeps the held version's: the cache shows the old spec",
		Edits: []Edit{{File: "internal/wire/unchanged.go",
			Old: "if u.ok && u.held.has(f) {",
			New: "if u.ok && f.num != 0 {"}},
		Cmd: harness,
	},
	// Without sharing, a field taken from the held version is deep-copied:
	// sharing it would let two versions of an object share parts in a cache
	// that promises none do (a handler mutating its new object changes the
	// old one).
	{
		Name:   "take-field-shared-without-sharing",
		Where:  "internal/wire/unchanged.go: (*unchanged).fill",
		Breaks: "the defaults' versions of an object share their unchanged spec: a mutation of one shows in the other",
		Edits: []Edit{{File: "internal/wire/unchanged.go",
			Old: "case !u.copy:",
			New: "case true:"}},
		Cmd: wirePackage,
	},
	// The digests kept for a key are used only while the handed object is
	// the version they were read from; without that check, digests of a
	// version the reflector has not been handed yet, or of a list's object
	// that the handed set no longer holds, vouch for another version's field.
	{
		Name:   "take-field-any-version",
		Where:  "internal/reflector/handed.go: (*Handed).prior",
		Breaks: "a new version takes the spec of an older version whose digests were never its own: the cache shows an old spec",
		Edits: []Edit{{File: "internal/reflector/handed.go",
			Old: "wire.VersionOfStrings(string(m.GetUID()), m.GetResourceVersion()) != sums.Version {",
			New: "false {"}},
		Cmd: handedPackage,
	},
	// Equal parts are compared along a plan of their type, in memory; a
	// plan that takes slices of one length for equal without comparing
	// their elements (as if they were one array) shares unequal lists.
	{
		Name:   "share-plan-skips-elements",
		Where:  "internal/shrink/equalplan.go: (*eqPlan).equal",
		Breaks: "lists of one length are equal whatever they hold: a Pod gets another Pod's containers, env or conditions (WithSharing)",
		Edits: []Edit{{File: "internal/shrink/equalplan.go",
			Old: "if sx.data == sy.data {\n\t\t\t\tcontinue",
			New: "if true {\n\t\t\t\tcontinue"}},
		Cmd: harness,
	},
	// Two edits: a hash of a map's string values that reads their first
	// four bytes only (a cheaper hash, harmless while adoptEqual compares) and
	// a lookup that trusts the hash (a faster lookup, harmless while the
	// hash is exact). Each alone changes nothing a user sees; together,
	// maps that differ in a value share one copy.
	{
		Name:   "share-maps-that-differ",
		Where:  "internal/shrink/sharer.go: (*sharer).mapString; internal/shrink/sharetable.go: (*shareTable).adoptEqual",
		Breaks: "two label maps with the same keys and values alike in their first 4 bytes (app-1, app-2) share one copy: a Pod shows another Pod's labels (WithSharing)",
		Edits: []Edit{
			{File: "internal/shrink/sharer.go",
				Old: "vh := maphash.String(shareSeed, vs)",
				New: "vh := maphash.String(shareSeed, vs[:min(len(vs), 4)])"},
			{File: "internal/shrink/sharetable.go",
				Old: "equal := plan.equal(unsafe.Pointer(cand), at)",
				New: "equal := cand.data != nil; _ = plan"},
		},
		Cmd: harness,
	},
	// The re-list diff finds unchanged objects by identity (the decoder
	// hands back the cached object itself); comparing resourceVersions
	// the wrong way round treats every changed object as unchanged.
	{
		Name:   "view-changed-as-unchanged",
		Where:  "internal/reflector/handed.go: (*Handed).Diff",
		Breaks: "a re-list inside the watch hands no MODIFIED for objects whose resourceVersion changed: the cache keeps the old versions",
		Edits: []Edit{{File: "internal/reflector/handed.go",
			Old: "\t\tcase old != obj:\n",
			New: "\t\tcase compareRV(old, obj) > 0:\n"}},
		Cmd: harness,
	},
	// The diff's shortcut when nothing was deleted compares the matched
	// objects with the list's length instead of the handed set's: a list with
	// no new object then skips the deletions.
	{
		Name:   "view-drops-deletes",
		Where:  "internal/reflector/handed.go: (*Handed).Diff",
		Breaks: "a re-list whose every object was already handed sends no DELETE for the objects it no longer has: deleted objects stay cached",
		Edits: []Edit{{File: "internal/reflector/handed.go",
			Old: "if len(matched)+len(matchedSpill) == len(v.byHash)+len(v.spill) {",
			New: "if len(matched)+len(matchedSpill) == len(items) {"}},
		Cmd: harness,
	},
	// A re-list's DELETED carries the list's resourceVersion (the server's
	// DELETED carries the deletion's); only an object that went to another
	// shard keeps its own. An inverted condition gives every deleted
	// object its own, older version.
	{
		Name:   "relist-delete-at-old-version",
		Where:  "internal/reflector/handed.go: (*Handed).goneAt",
		Breaks: "a re-list's DELETED events carry the deleted objects' old resourceVersions: the informer's resourceVersion goes back",
		Edits: []Edit{{File: "internal/reflector/handed.go",
			Old: "if v.MovedOut != nil && v.MovedOut(obj) {",
			New: "if v.MovedOut == nil || v.MovedOut(obj) {"}},
		Cmd: harness,
	},
	// A probe that finds a resumed watch working has read its first event;
	// dropping it, as if the probe had only looked, loses an event.
	{
		Name:   "watch-drops-probed-event",
		Where:  "internal/reflector/watch.go: (*leanWatch).run",
		Breaks: "the first event of a watch resumed through a probe (after a cut or failed stream) is lost",
		Edits: []Edit{{File: "internal/reflector/watch.go",
			Old: lines(
				"\t\tif w.peeked != nil {",
				"\t\t\tev := *w.peeked",
				"\t\t\tw.peeked = nil",
				"\t\t\tif !w.handle(ctx, ev, true) {",
				"\t\t\t\treturn",
				"\t\t\t}",
				"\t\t\tcontinue",
				"\t\t}"),
			New: lines(
				"\t\tif w.peeked != nil {",
				"\t\t\tw.peeked = nil",
				"\t\t\tcontinue",
				"\t\t}")}},
		Cmd: harness5xx,
	},
	// A re-list hands its changes (in resourceVersion order) before its
	// deletions (at the list's version); the other order hands older
	// versions after newer ones. No handler sees it (the keys differ), and
	// the informer's LastSyncResourceVersion goes back only for as long as
	// the reflector takes to queue the changes, microseconds.
	{
		Name:   "relist-reorders-events",
		Where:  "internal/reflector/watch.go: (*leanWatch).relist",
		Breaks: "a re-list hands its DELETED events (at the list's resourceVersion) before its ADDED and MODIFIED (older): the informer's resourceVersion goes back while they are queued",
		Edits: []Edit{{File: "internal/reflector/watch.go",
			Old: "evs := append(diff.Changed, diff.Deleted...)",
			New: "evs := append(diff.Deleted, diff.Changed...)"}},
		Cmd: harness,
	},
	// The watch records the resourceVersion of every event it hands on,
	// to resume a broken stream from there; not recording it resumes from
	// where the watch started and hands old events again.
	{
		Name:   "watch-resumes-from-start",
		Where:  "internal/reflector/watch.go: (*leanWatch).send",
		Breaks: "a cut watch resumes from the version it started at, not the last event's: events the informer had are handed again, older versions after newer",
		Edits: []Edit{{File: "internal/reflector/watch.go",
			Old: lines(
				"\t\tif m, err := meta.Accessor(ev.Object); err == nil && m.GetResourceVersion() != \"\" {",
				"\t\t\tw.rv = m.GetResourceVersion()",
				"\t\t}",
				""),
			// meta stays imported: the file uses it nowhere else.
			New: "\t\t_ = meta.Accessor\n"}},
		Cmd: harness,
	},
	// The bookmark that closes a re-list is a new object of the listed
	// objects' type, at the list's resourceVersion; taking the accessor of
	// the example object (the first listed) instead of the new one sends a
	// bookmark without a resourceVersion and writes the list's into a
	// cached object, in place.
	{
		Name:   "relist-bookmark-wrong-object",
		Where:  "internal/reflector/bookmark.go: bookmarkObject",
		Breaks: "the bookmark after a re-list carries no resourceVersion, and the first listed object, cached, is given the list's in place",
		Edits: []Edit{{File: "internal/reflector/bookmark.go",
			Old: lines(
				"\tm, err := meta.Accessor(obj)",
				"\tif err != nil {",
				"\t\treturn nil, false",
				"\t}",
				"\tm.SetResourceVersion(rv)"),
			New: lines(
				"\tm, err := meta.Accessor(like)",
				"\tif err != nil {",
				"\t\treturn nil, false",
				"\t}",
				"\tm.SetResourceVersion(rv)")}},
		Cmd: harness,
	},
	// After a rebalance, an object that went to another replica must be
	// deleted from this one's cache (it was not deleted on the server,
	// which is easy to take for "no DELETE").
	{
		Name:   "shard-moved-not-deleted",
		Where:  "internal/reflector/handed.go: (*Handed).Diff",
		Breaks: "after a rebalance an object that moved to another replica stays in this one's cache: two replicas hold it",
		Edits: []Edit{{File: "internal/reflector/handed.go",
			Old: "\t\tif _, ok := slices.BinarySearch(matched, h); !ok {\n",
			New: "\t\tif _, ok := slices.BinarySearch(matched, h); !ok && (v.MovedOut == nil || !v.MovedOut(obj)) {\n"}},
		Cmd: shardPackage,
	},
	// The same defect, against the harness's sharding program. A replica
	// that keeps the objects that moved away lists everything again after
	// the rebalance, which repairs its store before the union is checked:
	// TestShardUnion missed this defect until it counted each replica's
	// lists (one to start, one per rebalance).
	{
		Name:   "shard-moved-not-deleted-union",
		Where:  "internal/reflector/handed.go: (*Handed).Diff",
		Breaks: "after a rebalance an object that moved to another replica stays in this one's cache: two replicas hold it",
		Edits: []Edit{{File: "internal/reflector/handed.go",
			Old: "\t\tif _, ok := slices.BinarySearch(matched, h); !ok {\n",
			New: "\t\tif _, ok := slices.BinarySearch(matched, h); !ok && (v.MovedOut == nil || !v.MovedOut(obj)) {\n"}},
		Cmd: shardUnion,
	},
	// The decoder drops another shard's object before anything else; the
	// cache lookup first answers an unchanged object of another shard with
	// the cached one, so an object that moved away unchanged is kept.
	{
		Name:   "shard-skipped-kept",
		Where:  "internal/wire/decoder.go: (*Decoder).Object",
		Breaks: "an unchanged object of another shard is answered from the cache before the shard check: a replica keeps objects that moved away",
		Edits: []Edit{{File: "internal/wire/decoder.go",
			Old: lines(
				"\t// Sharding: an object of another shard is dropped here, from its",
				"\t// namespace and name alone, before anything of it is decoded.",
				"\tif d.caller.Skip(id.Namespace, id.Name) {",
				"\t\td.skippedRV = id.ResourceVersion",
				"\t\treturn nil, false, nil",
				"\t}",
				"\tif o, ok := d.caller.Cached(id); ok {",
				"\t\td.reused++",
				"\t\treturn o, true, nil",
				"\t}"),
			New: lines(
				"\tif o, ok := d.caller.Cached(id); ok {",
				"\t\td.reused++",
				"\t\treturn o, true, nil",
				"\t}",
				"\tif d.caller.Skip(id.Namespace, id.Name) {",
				"\t\td.skippedRV = id.ResourceVersion",
				"\t\treturn nil, false, nil",
				"\t}")}},
		Cmd: shardUnion,
	},
	// The encoded store (WithEncodedStore) keeps each object's bytes; an
	// update of an object it holds at the same resourceVersion keeps them
	// without encoding again. Comparing the key alone keeps the old bytes of
	// every updated object.
	{
		Name:   "encoded-upsert-keeps-old-bytes",
		Where:  "internal/encstore/store.go: (*Store).held",
		Breaks: "an update of an object the encoded store holds keeps the old version's bytes: every read returns the object as it was first stored",
		Edits: []Edit{{File: "internal/encstore/store.go",
			Old: "if !found || e.rv != rv {",
			New: "if !found {"}},
		Cmd: harness,
	},
	// A deletion that the re-list diff sends with a placeholder object is
	// resolved by the informer, in queue order, to the last object the
	// store holds; handing the placeholder on tells handlers an object with
	// no content.
	{
		Name:   "encoded-delete-placeholder-handed",
		Where:  "internal/informer/informer.go: (*sharedIndexInformer).resolveDeleted",
		Breaks: "a re-list's deletion reaches the handlers as the placeholder (name, uid and resourceVersion only), not as the last object they were told",
		Edits: []Edit{{File: "internal/informer/informer.go",
			Old: "if s.lastStored == nil || !s.lastStored(obj) {",
			New: "if s.lastStored == nil || s.lastStored != nil {"}},
		Cmd: harness,
	},
	// The hot cache of decoded objects is checked against the version the
	// store holds; looking up by key alone serves an object that changed
	// since it was read.
	{
		Name:   "encoded-hot-serves-changed",
		Where:  "internal/encstore/hot.go: (*hotCache).lookupLocked",
		Breaks: "a Get after an update returns the object as it was when last read, from the hot cache",
		Edits: []Edit{{File: "internal/encstore/hot.go",
			Old: "\tif !ok || it.ver != ver {\n\t\th.misses++\n\t\treturn nil\n",
			New: "\tif !ok {\n\t\th.misses++\n\t\treturn nil\n"}},
		Cmd: encstorePackage,
	},
	// A hot-cache hit hands the caller a copy, which it owns as it would a
	// freshly decoded object; handing the cached object itself lets one
	// caller's change reach every later read.
	{
		Name:   "encoded-hot-hands-its-object",
		Where:  "internal/encstore/hot.go: (*hotCache).copyOf",
		Breaks: "a hot-cache hit returns the cached object itself: a caller that changes what it read changes what the next caller reads",
		Edits: []Edit{{File: "internal/encstore/hot.go",
			Old: "\tobj := it.obj.DeepCopyObject()\n",
			New: "\tobj := it.obj\n"}},
		Cmd: encstorePackage,
	},
	// Upsert's replaced object is handed out only when no reader is copying
	// it; a reader's copy would otherwise read what the new owner (an update
	// handler) changes.
	{
		Name:   "encoded-old-object-while-copied",
		Where:  "internal/encstore/hot.go: (*hotCache).take",
		Breaks: "an update hands its caller the replaced object while a Get is copying it: the caller's changes race with the copy",
		Edits: []Edit{{File: "internal/encstore/hot.go",
			Old: "if it.ver != ver || it.copying > 0 {",
			New: "if it.ver != ver {"}},
		Cmd: encstoreRace,
	},
	// A miss keeps a copy of what it decoded in the hot cache, unless reads
	// are shared: keeping the caller's own object lets the caller's change
	// reach every later read.
	{
		Name:   "encoded-hot-keeps-the-callers-object",
		Where:  "internal/encstore/reader.go: (*reader).read",
		Breaks: "a read that decodes keeps the object it returns in the hot cache: a caller that changes it changes what the next caller reads",
		Edits: []Edit{{File: "internal/encstore/reader.go",
			Old: "\t\tif !r.shared {\n\t\t\tkept = obj.DeepCopyObject()",
			New: "\t\tif r.shared {\n\t\t\tkept = obj.DeepCopyObject()"}},
		Cmd: encstorePackage,
	},
	// Index values are computed once, when an object is stored; updating
	// the index with the replaced entry's values leaves an object under
	// the values it had before.
	{
		Name:   "encoded-index-keeps-old-values",
		Where:  "internal/encstore/store.go: (*Store).storeLocked",
		Breaks: "an object's index entries stay those of the version it replaced: ByIndex misses a new object and answers an updated one under its old values",
		Edits: []Edit{{File: "internal/encstore/store.go",
			Old: "s.index.update(p.key, old.values, p.e.values)",
			New: "s.index.update(p.key, old.values, old.values)"}},
		Cmd: encstorePackage,
	},
	// Replace deletes the keys its list does not have, in place.
	{
		Name:   "encoded-replace-keeps-gone",
		Where:  "internal/encstore/store.go: (*Store).Replace",
		Breaks: "a Replace keeps the objects its list no longer has",
		Edits: []Edit{{File: "internal/encstore/store.go",
			Old: "if _, ok := seen[key]; !ok {",
			New: "if _, ok := seen[key]; !ok && len(seen) == 0 {"}},
		Cmd: encstorePackage,
	},
	// A streaming list whose stream closed before the initial-events-end
	// bookmark failed once; taking it for a server that ignores
	// sendInitialEvents makes the informer list with LIST for good after
	// one cut body.
	{
		Name:   "closed-stream-is-refusal",
		Where:  "internal/reflector/streaming_list.go: streamingList.streamEnded",
		Breaks: "a streaming list whose body a proxy ended early counts as the server's refusal of streaming lists: the informer lists with LIST from then on",
		Edits: []Edit{{File: "internal/reflector/streaming_list.go",
			Old: "return fmt.Errorf(\"streaming list of %s: the stream ended after %d objects, before the initial-events-end bookmark\", sl.c.gr(), items)",
			New: "return fmt.Errorf(\"%w: the stream ended after %d objects\", errNoInitialEventsEnd, items)"}},
		Cmd: closedStream,
	},
	// An object packed while the store holds its key shares the stored
	// bytes only when the store holds its very version; sharing them for
	// any version packs a changed object as the old one.
	{
		Name:   "pack-shares-any-version",
		Where:  "internal/encstore/packed.go: (*Store).Pack",
		Breaks: "a listed object whose key the store holds is packed as the stored version: a change a list brings is lost",
		Edits: []Edit{{File: "internal/encstore/packed.go",
			Old: "if e, held := s.held(key, packed.ResourceVersion); held {",
			New: "if e, held := s.items[key]; held {"}},
		Cmd: encstorePackage,
	},
	// Applying a packed object that the store holds at its version decodes
	// nothing; a check of the key alone skips every change a list brings.
	{
		Name:   "keep-packed-ignores-version",
		Where:  "internal/encstore/packed.go: (*Store).KeepPacked",
		Breaks: "a packed new version of an object the store holds is skipped as unchanged: the store and handlers keep the old version",
		Edits: []Edit{{File: "internal/encstore/packed.go",
			Old: "_, same := s.keptSame(p.key, p.e.rv)\n\treturn same",
			New: "_, same := s.keptSame(p.key, p.e.rv)\n\treturn same || s.items[p.key].data != nil"}},
		Cmd: encstorePackage,
	},
	// A re-list inside the watch hands the reflector its differences as
	// watch events, which the reflector drops unless they are objects of
	// the informer's type: a packed difference goes as a stand-in.
	{
		Name:   "relist-sends-packed",
		Where:  "internal/reflector/watch.go: (*leanWatch).relist",
		Breaks: "an encoded informer's re-list inside the watch hands the reflector packed objects, which it drops: changes and creations are lost",
		Edits: []Edit{{File: "internal/reflector/watch.go",
			Old: "ev.Object = w.c.handed.StandIn(ev.Object)",
			New: "_ = w.c.handed.StandIn(ev.Object)"}},
		Cmd: harness,
	},
	// The informer applies the pack a stand-in carries; applying the
	// stand-in itself stores an object with nothing but metadata.
	{
		Name:   "stand-in-applied-as-is",
		Where:  "internal/informer/deltas.go: upsert",
		Breaks: "an encoded informer stores and hands its handlers the metadata-only stand-in of a re-list's changed object instead of the object",
		Edits: []Edit{{File: "internal/informer/deltas.go",
			Old: "\tobj = resolvePacked(handler, obj)\n",
			New: "\t_ = resolvePacked(handler, obj)\n"}},
		Cmd: harness,
	},
	// A pack's and a record's metadata is a metav1.Object itself: a new
	// copy at each read made megabytes of garbage at the end of a re-list
	// (its sort by resourceVersion), the encoded store's re-list peak.
	{
		Name:   "identity-copied-per-read",
		Where:  "internal/objmeta/identity.go: Identity",
		Breaks: "every read of a pack's metadata through meta.Accessor allocates a copy: megabytes of garbage at once when a re-list sorts its changed packs",
		Edits: []Edit{{File: "internal/objmeta/identity.go",
			Old: "var _ metav1.Object = (*Identity)(nil)\n",
			New: "func (m *Identity) GetObjectMeta() metav1.Object {\n\treturn &metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name, UID: types.UID(m.UID), ResourceVersion: m.ResourceVersion}\n}\n"}, {
			File: "internal/objmeta/identity.go",
			Old:  "func (*Identity) SetManagedFields(",
			New:  "func (*Identity) setManagedFields("}},
		Cmd: encstorePackage,
	},
	// Before it decodes a packed object, the informer yields to a handler
	// that has fallen behind, whose waiting notifications hold their
	// objects decoded.
	{
		Name:   "unpack-never-yields",
		Where:  "internal/informer/informer.go: (*sharedIndexInformer).beforeUnpack",
		Breaks: "an encoded informer decodes its first list faster than its handlers take it in, and their buffers hold the objects decoded: the start-up peak the packing removed comes back",
		Edits: []Edit{{File: "internal/informer/informer.go",
			Old: "if s.processor.backlog() <= handlerBacklog {",
			New: "if true || s.processor.backlog() <= handlerBacklog {"}},
		Cmd: unpackYields,
	},
	// The hand-over of a packed list decodes every object again and needs
	// about as many collections as the list, or more: it has twice the
	// usual budget.
	{
		Name:   "packed-hand-over-usual-budget",
		Where:  "internal/reflector/pace.go: (*Pacer).GuardPackedHandOver",
		Breaks: "the hand-over of a packed list uses up its collections before the informer syncs, and the heap reaches about twice the live heap at the end",
		Edits: []Edit{{File: "internal/reflector/pace.go",
			Old: "p.guardHandOver(ctx, takenIn, 2*maxForcedPerList)",
			New: "p.guardHandOver(ctx, takenIn, maxForcedPerList)"}},
		Cmd: pacerPackage,
	},
	// A first list's pacer is handed to the informer's indexer, which ticks
	// it as it stores the list's objects.
	{
		Name:   "index-tick-not-handed",
		Where:  "internal/reflector/lister.go: (*lister).finish",
		Breaks: "the indexer's tick never reaches a first list's pacer: only the guard's goroutine collects during client-go's hand-over, and a cache of small objects peaks higher at start-up",
		Edits: []Edit{{File: "internal/reflector/lister.go",
			Old: "if ls.c.pack != nil || !l.failure.Relist {",
			New: "if ls.c.pack != nil {"}},
		Cmd: pacerPackage,
	},
	// Handlers reach a first list's pacer as the indexer does.
	{
		Name:   "delivery-tick-dropped",
		Where:  "internal/reflector/pack.go: (*ListWatch).Delivered",
		Breaks: "the handlers' tick never reaches a first list's pacer: the garbage of client-go's delivery of the list's notifications is left to the guard's goroutine, and a cache of small objects peaks higher at start-up",
		Edits: []Edit{{File: "internal/reflector/pack.go",
			Old: "\t\tp.DeliveryTick()",
			New: "\t\t_ = p"}},
		Cmd: pacerPackage,
	},
	// The handlers leanstore gives client-go tick the heap bound for each
	// add of the initial list and pass every call on as client-go made it.
	{
		Name:   "paced-handler-drops-initial-flag",
		Where:  "pkg/leanstore/handlers.go: pacedHandler.OnAdd",
		Breaks: "a handler is told that the adds of the initial list are not in it: a controller that handles its initial list apart (isInInitialList) takes every cached object for a new one",
		Edits: []Edit{{File: "pkg/leanstore/handlers.go",
			Old: "h.ResourceEventHandler.OnAdd(obj, isInInitialList)",
			New: "h.ResourceEventHandler.OnAdd(obj, false)"}},
		Cmd: harness,
	},
	{
		Name:   "paced-handler-ticks-every-add",
		Where:  "pkg/leanstore/handlers.go: pacedHandler.OnAdd",
		Breaks: "every add ticks the heap bound, not only the initial list's: each add of the watch pays the tick's reads after the first list",
		Edits: []Edit{{File: "pkg/leanstore/handlers.go",
			Old: "\tif isInInitialList {\n\t\th.tick()",
			New: "\tif true {\n\t\th.tick()"}},
		Cmd: pacedHandlers,
	},
	// The encoded store's informer tells its handlers which adds are of the
	// initial list, as client-go's FIFO says.
	{
		Name:   "informer-drops-initial-flag",
		Where:  "internal/informer/informer.go: (*sharedIndexInformer).RunWithContext",
		Breaks: "the encoded store's handlers are told that the adds of the initial list are not in it: a controller that handles its initial list apart takes every cached object for a new one",
		Edits: []Edit{{File: "internal/informer/informer.go",
			Old: "return s.handleDeltas(logger, obj, isInInitialList)",
			New: "return s.handleDeltas(logger, obj, false)"}, {File: "internal/informer/informer.go",
			Old: "return s.handleBatchDeltas(logger, deltas, isInInitialList)",
			New: "return s.handleBatchDeltas(logger, deltas, false)"}},
		Cmd: harness,
	},
	// The index functions leanstore gives client-go tick the heap bound and
	// return the caller's values and errors.
	{
		Name:   "paced-index-drops-errors",
		Where:  "pkg/leanstore/informer.go: pacedIndexers",
		Breaks: "an index function's error is dropped: client-go's indexer stores the object under no value instead of failing the add",
		Edits: []Edit{{File: "pkg/leanstore/informer.go",
			Old: "\t\t\ttick()\n\t\t\treturn f(obj)",
			New: "\t\t\ttick()\n\t\t\tvalues, _ := f(obj)\n\t\t\treturn values, nil"}},
		Cmd: pacedIndexers,
	},
	// The same wrapper, losing the values it should pass on: every
	// leanstore informer's namespace index is empty, and a lister's
	// Pods(ns).List returns nothing.
	{
		Name:   "paced-index-drops-values",
		Where:  "pkg/leanstore/informer.go: pacedIndexers",
		Breaks: "the namespace index of every leanstore informer without an encoded store is empty: a lister's namespaced List returns nothing",
		Edits: []Edit{{File: "pkg/leanstore/informer.go",
			Old: "\t\t\ttick()\n\t\t\treturn f(obj)",
			New: "\t\t\ttick()\n\t\t\t_, err := f(obj)\n\t\t\treturn nil, err"}},
		Cmd: harness,
	},
	// The same wrapper, adding a value of its own: the index gives a
	// namespace the store holds no object in, and a lister's
	// Pods("ghost-ns").List returns every object.
	{
		Name:   "paced-index-ghost-namespace",
		Where:  "pkg/leanstore/informer.go: pacedIndexers",
		Breaks: "the namespace index of every leanstore informer without an encoded store files each object under a namespace it is not in as well: a lister's List of that namespace returns objects of others",
		Edits: []Edit{{File: "pkg/leanstore/informer.go",
			Old: "\t\t\ttick()\n\t\t\treturn f(obj)",
			New: "\t\t\ttick()\n\t\t\tv, err := f(obj)\n\t\t\treturn append(v, \"ghost-ns\"), err"}},
		Cmd: harness,
	},
	// Sharing walks an object without a previous version beside a sibling
	// (another object of its controller) and takes the sibling's canonical
	// parts that are equal to its own; one taken without the comparison
	// gives the object its sibling's labels, containers or env.
	{
		Name:   "share-sibling-unequal",
		Where:  "internal/shrink/sharer.go: (*sharer).canonicalPrev",
		Breaks: "a Pod listed or added with a controller takes its sibling's canonical labels, containers and owner references even where its own differ (WithSharing)",
		Edits: []Edit{{File: "internal/shrink/sharer.go",
			Old: "if e.n != n || (n >= 0 && prev.Len() != n) || !equalValues(v, prev) {",
			New: "if !s.sibling && (e.n != n || (n >= 0 && prev.Len() != n) || !equalValues(v, prev)) {"}},
		Cmd: harness,
	},
	// A sibling's own parts (those sharing has not made canonical) are no
	// other object's; taking an equal one, as a new version takes its
	// previous version's, links two objects outside the share table.
	{
		Name:   "share-sibling-own-parts",
		Where:  "internal/shrink/sharer.go: (*sharer).ownPrev",
		Breaks: "objects of one controller hold one copy of parts the share table does not know: the mutation guard does not watch them, and a second walk of the sibling may write into them while the other object is cached (WithSharing)",
		Edits: []Edit{{File: "internal/shrink/sharer.go",
			Old: "if !s.containers || s.track || s.sibling || !prev.IsValid()",
			New: "if !s.containers || s.track || !prev.IsValid()"}},
		Cmd: shrinkPackage,
	},
}
