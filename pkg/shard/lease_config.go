package shard

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"
)

// GroupLabel labels the Leases of a shard group with the group's name.
const GroupLabel = "shard.cachetune.dev/group"

// LeaseConfig configures a Lease membership. The timing knobs mean what they
// mean in client-go's leader election, and have its defaults.
type LeaseConfig struct {
	// Namespace holds the Leases. Required.
	Namespace string
	// Group names the replicas that share caches, e.g. the controller's name.
	// Required. Each replica's Lease is named <Group>-<Identity> and labelled
	// GroupLabel=<Group>.
	Group string
	// Identity is this replica's name, unique in the group; the default is
	// the host name, which is the Pod's name in Kubernetes. Two processes
	// with one identity would renew one Lease and hold the same objects.
	Identity string
	// LeaseDuration is how long the other replicas wait, after they last saw
	// this replica's Lease renewed, before they take its objects (15 s).
	LeaseDuration time.Duration
	// RenewDeadline is how long this replica keeps its objects while it fails
	// to renew its Lease (10 s); then it drops them, before the others take
	// them, so that no object is held by two replicas at rest. It must be
	// shorter than LeaseDuration.
	RenewDeadline time.Duration
	// RetryPeriod is the time between renewals (2 s).
	RetryPeriod time.Duration
	// Logger receives ring changes and renewal failures (default klog's).
	Logger logr.Logger
}

// leaseJitter is client-go's leader-election JitterFactor: the renew deadline
// must leave room for a retry period stretched by it.
const leaseJitter = 1.2

func (c *LeaseConfig) defaults() error {
	if c.Namespace == "" {
		return errors.New("shard: lease membership: Namespace is required")
	}
	if c.Group == "" {
		return errors.New("shard: lease membership: Group is required")
	}
	if errs := validation.IsValidLabelValue(c.Group); len(errs) > 0 {
		return fmt.Errorf("shard: lease membership: Group %q is not a valid label value: %s", c.Group, strings.Join(errs, "; "))
	}
	if c.Identity == "" {
		h, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("shard: lease membership: no Identity given and no host name: %w", err)
		}
		c.Identity = strings.ToLower(h)
	}
	if errs := validation.IsDNS1123Subdomain(c.leaseName()); len(errs) > 0 {
		return fmt.Errorf("shard: lease membership: the Lease name %q (Group-Identity) is not a valid name: %s", c.leaseName(), strings.Join(errs, "; "))
	}
	if c.LeaseDuration == 0 {
		c.LeaseDuration = 15 * time.Second
	}
	if c.RenewDeadline == 0 {
		c.RenewDeadline = 10 * time.Second
	}
	if c.RetryPeriod == 0 {
		c.RetryPeriod = 2 * time.Second
	}
	switch {
	case c.LeaseDuration < time.Second:
		return fmt.Errorf("shard: lease membership: LeaseDuration must be at least 1s (a Lease counts whole seconds), got %s", c.LeaseDuration)
	case c.LeaseDuration <= c.RenewDeadline:
		return fmt.Errorf("shard: lease membership: LeaseDuration (%s) must be greater than RenewDeadline (%s)", c.LeaseDuration, c.RenewDeadline)
	case c.RetryPeriod <= 0:
		return fmt.Errorf("shard: lease membership: RetryPeriod must be positive, got %s", c.RetryPeriod)
	case c.RenewDeadline <= time.Duration(leaseJitter*float64(c.RetryPeriod)):
		return fmt.Errorf("shard: lease membership: RenewDeadline (%s) must be greater than RetryPeriod*%.1f (%s)", c.RenewDeadline, leaseJitter, c.RetryPeriod)
	}
	if c.Logger.GetSink() == nil {
		c.Logger = klog.Background()
	}
	return nil
}

func (c *LeaseConfig) leaseName() string { return c.Group + "-" + c.Identity }
