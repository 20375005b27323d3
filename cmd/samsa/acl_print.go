package main

// Output of `samsa acl`: pure functions, tested in acl_test.go.

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// aclEntry is one ACL as the commands print it.
type aclEntry struct {
	Type       kmsg.ACLResourceType
	Name       string
	Pattern    kmsg.ACLResourcePatternType
	Principal  string
	Host       string
	Operation  kmsg.ACLOperation
	Permission kmsg.ACLPermissionType
}

// String is the ACL on one line, for errors.
func (e aclEntry) String() string {
	return fmt.Sprintf("%s %s %s on %s:%s:%s from host %s", e.Principal, e.Permission, e.Operation, e.Type, e.Pattern, e.Name, e.Host)
}

// sortACLEntries sorts es by resource (type, name, pattern), then
// principal, host, operation and permission, and drops duplicates.
func sortACLEntries(es []aclEntry) []aclEntry {
	slices.SortFunc(es, func(x, y aclEntry) int {
		return cmp.Or(cmp.Compare(x.Type, y.Type), cmp.Compare(x.Name, y.Name), cmp.Compare(x.Pattern, y.Pattern),
			cmp.Compare(x.Principal, y.Principal), cmp.Compare(x.Host, y.Host),
			cmp.Compare(x.Operation, y.Operation), cmp.Compare(x.Permission, y.Permission))
	})
	return slices.Compact(es)
}

// printACLs writes the ACLs, sorted and distinct, as a table under a
// header line; a non-empty title adds a line "<title> N ACL(s):" above.
func printACLs(w io.Writer, title string, es []aclEntry) error {
	es = sortACLEntries(slices.Clone(es))
	bw := bufio.NewWriter(w)
	if title != "" {
		fmt.Fprintf(bw, "%s %d %s:\n", title, len(es), plural(len(es), "ACL", "ACLs"))
	}
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "TYPE\tNAME\tPATTERN\tPRINCIPAL\tHOST\tOPERATION\tPERMISSION\n")
	for _, e := range es {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Type, e.Name, e.Pattern, e.Principal, e.Host, e.Operation, e.Permission)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return bw.Flush()
}
