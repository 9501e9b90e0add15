package main

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// startEtcd runs a single-member etcd in this process. fsync is off: the data lives
// only as long as the process, and tests seed tens of thousands of objects.
func startEtcd(dir string, clientPort, peerPort int, quota int64) (*embed.Etcd, error) {
	cfg := embed.NewConfig()
	cfg.Name = "cachetune"
	cfg.Dir = dir
	client := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(clientPort))}
	peer := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(peerPort))}
	cfg.ListenClientUrls = []url.URL{client}
	cfg.AdvertiseClientUrls = []url.URL{client}
	cfg.ListenPeerUrls = []url.URL{peer}
	cfg.AdvertisePeerUrls = []url.URL{peer}
	cfg.InitialCluster = cfg.Name + "=" + peer.String()
	cfg.LogLevel = "error"
	cfg.UnsafeNoFsync = true
	cfg.QuotaBackendBytes = quota
	// Large Secrets and streaming lists of big Pods exceed etcd's 1.5 MiB default.
	cfg.MaxRequestBytes = 8 << 20

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("start etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("etcd: %w", err)
	case <-time.After(time.Minute):
		e.Close()
		return nil, fmt.Errorf("etcd was not ready after a minute")
	}
}

// freePorts asks the kernel for n distinct free ports on 127.0.0.1. The listeners are
// held until all ports are chosen so that the same port is never returned twice.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
