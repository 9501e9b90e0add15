// Package reconcile runs a controller's reconcile function on client-go's
// workqueue, with error handling that neither loses a failure nor floods the
// API server: transient errors retried with per-key exponential backoff and
// jitter, permanent ones recorded on the object and parked until its spec
// changes, a reset on success, asynchronous hooks with a time limit, and a
// structured trace and Prometheus metrics for every reconcile. It is a thin
// layer over workqueue.TypedRateLimitingInterface[cache.ObjectName] and
// informers, not a framework: the reconcile function reads listers and writes
// with clients as any client-go controller does.
//
// The guide that uses it: docs/reconcile.md.
//
//	loop := reconcile.New("widgets", reconcileWidget,
//		reconcile.WithWorkers(4),
//		reconcile.WithOnPermanent(reconcile.ConditionHook(dyn, widgetsGVR, "Ready")),
//		reconcile.WithMetrics(prometheus.DefaultRegisterer),
//	)
//	loop.Watch(widgets.Informer())                                   // spec changes, not status writes
//	loop.WatchRelated(configMaps.Informer(), reconcile.ByOwner(widgetGK)) // children
//	factory.Start(ctx.Done())
//	return loop.Run(ctx) // until ctx ends; drains and leaves no goroutine
//
//	func reconcileWidget(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
//		w, err := lister.Namespace(req.Key.Namespace).Get(req.Key.Name)
//		if apierrors.IsNotFound(err) {
//			return reconcile.Result{}, nil // deleted
//		}
//		if size(w) < 1 {
//			return reconcile.Result{}, failure.Reconcile(failure.InvalidSpec, req.Key.String(), errors.New("spec.size must be positive"))
//		}
//		...
//	}
//
// # The loop
//
// A fixed number of workers (WithWorkers, default 2) take keys off the
// queue; the workqueue never hands out a key that is being reconciled, so
// one object never runs twice at once, and a key queued many times before
// it runs runs once. Each queued key carries why it was queued (Trigger:
// object changed, related object changed, requeued, retry, resync,
// enqueued), merged when duplicates merge. WithDebounce turns a burst of
// events for one key into one reconcile. When Run's context ends, the
// reconciles in flight finish, what is still queued is dropped, and Run
// returns once no goroutine of the loop is left.
//
// # The error policy
//
// The reconcile function's error is classified by package failure:
//
//	nil                              reset the key's backoff; Result.RequeueAfter runs it again later
//	transient: network, time-out,    retry after the key's backoff (DefaultBackoff: 800 ms doubling
//	429, 5xx, unknown errors         to 30 s, up to 50 % jitter), or the server's Retry-After if longer
//	409 resourceVersion conflict     retry after 100 ms for the first 3 failures in a row, then as above
//	permanent: InvalidSpec, 400,     park: no retry until the object's generation changes, a related
//	401, 403, 404, 422, ...          object changes or code enqueues it; WithOnPermanent records why
//
// A parked key remembers the generation it failed on, and events of that
// generation (the status write that records the failure, resyncs) are
// dropped before they reach the queue. Hooks (WithOnPermanent, WithOnError)
// run off the workers, at most WithHookConcurrency at a time, each under
// WithHookTimeout: this is the asynchronous work, such as a status update,
// that a synchronous error policy cannot do without holding a worker. A key that fails forever costs at
// most Backoff.MaxAttempts reconciles in any window: one per Backoff.Cap once
// the backoff has ramped up.
//
// # Traces and metrics
//
// Every reconcile logs one line (a logr.Logger, WithLogger) with the
// controller, the object, the trigger, the attempt, the duration, the time
// it waited in the queue, the outcome (success, requeue, retry, parked,
// canceled), the error and its class, and when it runs next. WithMetrics
// registers, each labelled controller:
//
//	cachetune_reconcile_total{outcome}                reconciles by outcome
//	cachetune_reconcile_errors_total{reason,cause,kind}  failures by error class
//	cachetune_reconcile_duration_seconds{outcome}     histogram of reconcile time
//	cachetune_reconcile_triggers_total{trigger}       why reconciles ran
//	cachetune_reconcile_queue_depth                   keys due, waiting for a worker
//	cachetune_reconcile_queue_oldest_seconds          the longest such wait
//	cachetune_reconcile_scheduled_keys                keys waiting for a backoff, requeue or debounce
//	cachetune_reconcile_backoff_keys                  keys whose last reconcile failed transiently
//	cachetune_reconcile_parked_keys                   keys parked on a permanent error
//	cachetune_reconcile_active, _workers              reconciles running, and the bound
//	cachetune_reconcile_events_dropped_total{reason}  events of a parked key's failed generation
//	cachetune_reconcile_merged_total                  runs saved by merging
//	cachetune_reconcile_hooks_total{hook,result}      hook calls: ok, error, timeout, skipped
package reconcile
