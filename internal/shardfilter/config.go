package shardfilter

import (
	"errors"
	"fmt"

	"github.com/cachetune/cachetune/pkg/shard"
)

// Config is a sharding choice (leanstore's WithShard): the membership whose
// ring decides, and what an object's shard is keyed by.
type Config struct {
	Membership *shard.Membership
	By         shard.By
}

// Err says what is wrong with c, or nil.
func (c *Config) Err() error {
	switch {
	case c.Membership == nil:
		return errors.New("leanstore: WithShard needs a Membership (shard.Static or shard.NewLeaseMembership), got nil")
	case !c.By.Valid():
		return fmt.Errorf("leanstore: WithShard: shard by %q: want %q or %q", c.By, shard.ByObject, shard.ByNamespace)
	}
	return nil
}

// Waiting reports whether c's membership is not ready yet (c nil: no
// sharding, nothing to wait for).
func (c *Config) Waiting() bool {
	return c != nil && c.Membership != nil && !c.Membership.Status().Ready
}

// WaitingWhy is the reason c's membership is not ready yet, in parentheses,
// or "".
func (c *Config) WaitingWhy() string {
	if c == nil || c.Membership == nil {
		return ""
	}
	if e := c.Membership.Status().LastError; e != "" {
		return " (" + e + ")"
	}
	return ""
}
