package leanstore

// KeepLeaseOnStopForTest makes a Lease membership leave its Lease behind when
// it stops, as a process killed with SIGKILL does: the other replicas then
// take its objects only once the Lease expires. Call it before Start.
func (m *Membership) KeepLeaseOnStopForTest() {
	if m.leases != nil {
		m.leases.keepOnStop = true
	}
}
