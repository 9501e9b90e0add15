package bench

// ControllerRuntime is the program that measures the controller-runtime modes:
// the root module never requires controller-runtime, so they are implemented
// in the controllerruntime module's cachebench-cr.
var ControllerRuntime = &Program{Name: "cachebench-cr", Module: "controllerruntime", Package: "./cmd/cachebench-cr"}

// The controller-runtime modes: a Manager's cache as a kubebuilder operator
// has it, typed objects read through the manager's client, with each of
// controller-runtime's own memory options and with leancache (leanstore
// informers under the same cache). controller-runtime cannot choose the list
// path (its reflectors follow client-go's WatchListClient gate), so each mode
// runs with client-go's default, streaming lists. They are extra: five more
// processes, and the first run builds cachebench-cr.
func init() {
	modes := []Mode{
		{Name: "controller-runtime/default/stream", Title: "controller-runtime cache, defaults (deep copy on read)"},
		{Name: "controller-runtime/strip-mf/stream", Title: "controller-runtime cache, TransformStripManagedFields"},
		{Name: "controller-runtime/no-deepcopy/stream", Title: "controller-runtime cache, UnsafeDisableDeepCopy"},
		{Name: "controller-runtime/leancache-strip-mf-la/stream", Title: "controller-runtime cache on leancache, strip managedFields and last-applied"},
		{Name: "controller-runtime/leancache-lean/stream", Title: "controller-runtime cache on leancache, strip managedFields and last-applied, share equal parts"},
	}
	for i := range modes {
		m := &modes[i]
		m.Title += ", streaming"
		m.Streaming, m.Supports, m.Extra = true, BuiltinOnly, true
		// Custom resources beside typed ones are unstructured objects in the
		// same manager's cache; registerProgramModes stubs it until
		// cachebench-cr implements it.
		m.Dynamic = elsewhere(m.Name, ControllerRuntime)
	}
	registerProgramModes(ControllerRuntime, modes...)
}
