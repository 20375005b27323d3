package main

// `cluster describe` output: a plain model built from a kadm Metadata
// result, and its printer. Pure, tested in cluster_print_test.go.
//
// Kafka has no single command for this (kafka-broker-api-versions and
// kafka-metadata-quorum come closest); the format is samsa's own:
//
//	Cluster: <id>  Controller: 2  Brokers: 3
//	ID  ADDRESS          RACK  ALIVE  LEADERS  REPLICAS
//	1   127.0.0.1:9092   -     yes    4        12
//	Partitions: 12  Offline: 0  Under-replicated: 0

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
)

// clusterDescription is the cluster as `cluster describe` shows it.
type clusterDescription struct {
	// ClusterID is "" when the cluster reports none.
	ClusterID string
	// Controller is the controller's node id, -1 when there is none.
	Controller int32
	// Brokers are every broker in the metadata (alive) and every broker
	// that some partition lists as a replica without it being in the
	// metadata (not alive), sorted by id.
	Brokers []brokerDescription
	// Partitions counts the partitions of all topics, internal ones
	// included; Offline those without a live leader; UnderReplicated those
	// with fewer in-sync replicas than replicas. They overlap, with the
	// definitions of `topic describe`.
	Partitions, Offline, UnderReplicated int
}

// brokerDescription is one line of the broker table.
type brokerDescription struct {
	ID int32
	// Addr is the advertised host:port; "" when not alive (unknown).
	Addr string
	// Rack is broker.rack, "" when unset.
	Rack  string
	Alive bool
	// Leaders counts the partitions it leads, Replicas those it is a
	// replica of (leading or not).
	Leaders, Replicas int
}

// buildClusterDescription derives the description from a metadata
// response that covers all topics.
func buildClusterDescription(md kadm.Metadata) clusterDescription {
	d := clusterDescription{ClusterID: md.Cluster, Controller: md.Controller}
	byID := map[int32]*brokerDescription{}
	live := make(map[int32]bool, len(md.Brokers))
	broker := func(id int32) *brokerDescription {
		b, ok := byID[id]
		if !ok {
			b = &brokerDescription{ID: id}
			byID[id] = b
		}
		return b
	}
	for _, mb := range md.Brokers {
		b := broker(mb.NodeID)
		b.Alive = true
		b.Addr = net.JoinHostPort(mb.Host, strconv.Itoa(int(mb.Port)))
		if mb.Rack != nil {
			b.Rack = *mb.Rack
		}
		live[mb.NodeID] = true
	}
	for _, td := range md.Topics {
		for _, p := range td.Partitions {
			d.Partitions++
			h := partitionHealth{p: partitionDescription{Leader: p.Leader, Replicas: p.Replicas, ISR: p.ISR}, live: live}
			if h.unavailable() {
				d.Offline++
			}
			if h.underReplicated() {
				d.UnderReplicated++
			}
			if p.Leader >= 0 {
				broker(p.Leader).Leaders++
			}
			for _, r := range p.Replicas {
				broker(r).Replicas++
			}
		}
	}
	for _, b := range byID {
		d.Brokers = append(d.Brokers, *b)
	}
	slices.SortFunc(d.Brokers, func(a, b brokerDescription) int { return int(a.ID) - int(b.ID) })
	return d
}

// printClusterDescription writes the header line, the broker table and the
// partition counts.
func printClusterDescription(w io.Writer, d clusterDescription) error {
	bw := bufio.NewWriter(w)
	notAlive := 0
	for _, b := range d.Brokers {
		if !b.Alive {
			notAlive++
		}
	}
	controller := "none"
	if d.Controller >= 0 {
		controller = strconv.Itoa(int(d.Controller))
	}
	fmt.Fprintf(bw, "Cluster: %s  Controller: %s  Brokers: %d", orDash(d.ClusterID), controller, len(d.Brokers))
	if notAlive > 0 {
		fmt.Fprintf(bw, " (%d not alive)", notAlive)
	}
	bw.WriteByte('\n')

	// The last column ends each line without a tab, so lines carry no
	// trailing padding.
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "ID\tADDRESS\tRACK\tALIVE\tLEADERS\tREPLICAS\n")
	for _, b := range d.Brokers {
		alive := "no"
		if b.Alive {
			alive = "yes"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%d\n", b.ID, orDash(b.Addr), orDash(b.Rack), alive, b.Leaders, b.Replicas)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(bw, "Partitions: %d  Offline: %d  Under-replicated: %d\n", d.Partitions, d.Offline, d.UnderReplicated)
	return bw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
