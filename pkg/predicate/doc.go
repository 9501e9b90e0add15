// Package predicate filters client-go informer events before they reach a
// handler, and counts what each filter passed and dropped, so that "my
// reconciler never runs because a predicate drops everything" shows in numbers
// instead of silence.
//
// The guide that uses it: docs/troubleshooting.md.
//
// A Predicate judges the three informer events (Create, Update, Delete) on
// anything an informer delivers: typed objects, *unstructured.Unstructured,
// *metav1.PartialObjectMetadata, and cache.DeletedFinalStateUnknown tombstones on
// delete. Put one in front of a handler with Handler:
//
//	p := predicate.Any(predicate.GenerationChanged(), predicate.FinalizersChanged())
//	informer.AddEventHandler(predicate.Handler(p, handler))
//	prometheus.MustRegister(predicate.NewCollector(p))
//	...
//	fmt.Printf("%+v\n", p.Stats()) // {Create:{Passed:.. Filtered:..} Update:{..} Delete:{..}}
//
// # Which events pass
//
// The change predicates (GenerationChanged, ResourceVersionChanged,
// LabelsChanged, AnnotationsChanged, FinalizersChanged) judge updates only and
// pass every add and every delete: an object appearing or disappearing is a
// change of everything, and a controller must not miss it. DeletionStarted
// passes an update that sets deletionTimestamp, an add of an object that is
// already Terminating, and every delete. Events without a readable object (a
// tombstone whose final state is unknown) pass unjudged.
//
// Any and All let every operand judge every event, so each operand's counters
// stay exact inside a combination; Not inverts all three events. Custom
// predicates come from New with Funcs.
//
// # Counters
//
// Every predicate the package returns is a *Counted: Stats gives passed and
// filtered counts per event kind, and NewCollector exports them as the
// Prometheus counter cachetune_predicate_events_total{predicate,event,result}.
// A predicate whose update counter shows only "filtered" while the objects
// change is why a reconciler never runs; a generation-only predicate that
// filters every finalizer update is why an object stays Terminating (combine
// with FinalizersChanged). docs/troubleshooting.md lists both symptoms.
package predicate
