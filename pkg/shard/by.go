package shard

// By says what of an object decides its shard.
type By string

const (
	// ByObject hashes each object's namespace and name: the objects spread
	// evenly over the members, whatever the namespaces.
	ByObject By = "object"
	// ByNamespace hashes each object's namespace, so that one member holds
	// every object of a namespace: for controllers that join objects of one
	// namespace (a Service and its Pods). A cluster-scoped object is hashed
	// by its name as if it were a namespace, so that a Namespace object goes
	// with the objects in it.
	ByNamespace By = "namespace"
)

// Valid reports whether b is ByObject or ByNamespace.
func (b By) Valid() bool { return b == ByObject || b == ByNamespace }
