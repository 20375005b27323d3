package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { extraCommands = append(extraCommands, newACLCmd) }

// `samsa acl create|list|delete` manages ACLs with CreateAcls, DescribeAcls
// and DeleteAcls, as kafka-acls.sh --add, --list and --remove do, with
// kafka-acls.sh's flag names. The broker must run an authorizer
// (authorizer.class.name); without one it answers SECURITY_DISABLED.
// Creating and deleting need ALTER on the cluster, listing DESCRIBE, which
// super users have. Unlike kafka-acls.sh, create wants the operations
// named (--operation, --producer or --consumer) rather than granting ALL
// when none is given, and delete without --force asks on stdin after
// listing what matches (which needs DESCRIBE too).
func newACLCmd() *cobra.Command {
	o := &extraOptions{}
	cmd := &cobra.Command{
		Use:   "acl",
		Short: "Create, list and delete ACLs, like kafka-acls.sh",
	}
	cmd.PersistentFlags().DurationVar(&o.timeout, "timeout", defaultTimeout,
		"give up if the cluster has not answered within this time")
	cmd.AddCommand(newACLCreateCmd(o), newACLListCmd(o), newACLDeleteCmd(o))
	return cmd
}

// aclFlags are the flags of the acl subcommands; each subcommand registers
// the ones it takes.
type aclFlags struct {
	topics, groups, txnIDs []string
	cluster                bool
	pattern                string
	// patternSet says whether --resource-pattern-type was given.
	patternSet bool

	allow, deny           []string
	allowHosts, denyHosts []string
	operations            []string
	// principals is list's --principal.
	principals []string

	producer, consumer bool
	force              bool
}

func (a *aclFlags) addResourceFlags(f *pflag.FlagSet, patternHelp string) {
	f.StringArrayVar(&a.topics, "topic", nil, "a topic (* = every topic); repeatable")
	f.StringArrayVar(&a.groups, "group", nil, "a consumer group (* = every group); repeatable")
	f.StringArrayVar(&a.txnIDs, "transactional-id", nil, "a transactional ID (* = every one); repeatable")
	f.BoolVar(&a.cluster, "cluster", false, "the cluster resource (kafka-cluster)")
	f.StringVar(&a.pattern, "resource-pattern-type", "literal", patternHelp)
}

func (a *aclFlags) addPrincipalFlags(f *pflag.FlagSet, hostDefault string) {
	f.StringArrayVar(&a.allow, "allow-principal", nil, "a principal to allow, Type:name as User:alice or User:*; repeatable")
	f.StringArrayVar(&a.deny, "deny-principal", nil, "a principal to deny, Type:name; repeatable")
	f.StringArrayVar(&a.allowHosts, "allow-host", nil, "a host (IP address) the allowed principals connect from; repeatable "+hostDefault)
	f.StringArrayVar(&a.denyHosts, "deny-host", nil, "a host (IP address) the denied principals connect from; repeatable "+hostDefault)
}

const operationHelp = "Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite or All"

func newACLCreateCmd(o *extraOptions) *cobra.Command {
	a := &aclFlags{}
	cmd := &cobra.Command{
		Use:   "create (--allow-principal P | --deny-principal P)... (--operation OP... | --producer | --consumer) RESOURCE...",
		Short: "Create ACLs: each principal gets each operation on each resource",
		Long: "Create ACLs, like kafka-acls.sh --add. Each allowed and denied principal gets each\n" +
			"operation on each resource named with --topic, --group, --transactional-id or\n" +
			"--cluster. --producer stands for Write, Describe and Create on the topics (Write and\n" +
			"Describe on the transactional IDs); --consumer for Read and Describe on the topics\n" +
			"and Read on the groups.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sels, err := a.createSelections()
			if err != nil {
				return err
			}
			return o.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				var created []aclEntry
				var failed []aclFailure
				for _, s := range sels {
					res, err := adm.CreateACLs(ctx, s.createBuilder())
					if err != nil {
						return err
					}
					for _, r := range res {
						e := aclEntry{Type: r.Type, Name: r.Name, Pattern: r.Pattern, Principal: r.Principal,
							Host: r.Host, Operation: r.Operation, Permission: r.Permission}
						if r.Err != nil {
							failed = append(failed, aclFailure{e, kafkaErr(r.Err, r.ErrMessage)})
							continue
						}
						created = append(created, e)
					}
				}
				if len(created) > 0 {
					if err := printACLs(cmd.OutOrStdout(), "Created", created); err != nil {
						return err
					}
				}
				return aclFailuresErr("creating", failed)
			})
		},
	}
	f := cmd.Flags()
	a.addResourceFlags(f, "literal (the exact name) or prefixed (every name starting with it)")
	a.addPrincipalFlags(f, "(default *, every host)")
	f.StringSliceVar(&a.operations, "operation", nil, operationHelp+"; repeatable")
	f.BoolVar(&a.producer, "producer", false, "the ACLs of a producer: Write, Describe and Create on the topics")
	f.BoolVar(&a.consumer, "consumer", false, "the ACLs of a consumer: Read and Describe on the topics, Read on the groups")
	return cmd
}

func newACLListCmd(o *extraOptions) *cobra.Command {
	a := &aclFlags{}
	cmd := &cobra.Command{
		Use:   "list [RESOURCE...] [--principal P]...",
		Short: "List ACLs, all or those of some resources or principals",
		Long: "List ACLs, like kafka-acls.sh --list: those of the resources named with --topic,\n" +
			"--group, --transactional-id or --cluster (all resources if none is), optionally only\n" +
			"those of some principals.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a.patternSet = cmd.Flags().Changed("resource-pattern-type")
			sel, err := a.listSelection()
			if err != nil {
				return err
			}
			return o.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				found, err := describeACLs(ctx, adm, sel)
				if err != nil {
					return err
				}
				return printACLs(cmd.OutOrStdout(), "", found)
			})
		},
	}
	f := cmd.Flags()
	a.addResourceFlags(f, "which resource names --topic, --group and --transactional-id select: literal (ACLs of\n"+
		"exactly that name), prefixed (prefixed ACLs of exactly that prefix), any (both), or\n"+
		"match (every ACL that applies to that name: literal, wildcard and prefixed);\n"+
		"without a resource, all ACLs are listed unless this is given")
	f.StringArrayVar(&a.principals, "principal", nil, "list only the ACLs of this principal, Type:name; repeatable")
	f.StringSliceVar(&a.operations, "operation", nil, "list only the ACLs of this operation ("+operationHelp+"); repeatable")
	return cmd
}

func newACLDeleteCmd(o *extraOptions) *cobra.Command {
	a := &aclFlags{}
	cmd := &cobra.Command{
		Use:   "delete RESOURCE... [--allow-principal P]... [--deny-principal P]... [--operation OP]... [--force]",
		Short: "Delete the ACLs of some resources, optionally only some principals' or operations'",
		Long: "Delete ACLs, like kafka-acls.sh --remove: those of the resources named with --topic,\n" +
			"--group, --transactional-id or --cluster, narrowed by --allow-principal,\n" +
			"--deny-principal (then only those ALLOW or DENY ACLs), --allow-host, --deny-host and\n" +
			"--operation; a filter not given matches everything. Unless --force is given, the\n" +
			"matching ACLs are shown (which needs DESCRIBE on the cluster) and a \"y\" on standard\n" +
			"input must confirm; the output lists the ACLs actually deleted.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sel, err := a.deleteSelection()
			if err != nil {
				return err
			}
			return o.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				if !a.force {
					found, err := describeACLs(ctx, adm, sel)
					if err != nil {
						return err
					}
					if len(found) == 0 {
						fmt.Fprintln(cmd.OutOrStdout(), "No ACLs match; nothing deleted.")
						return nil
					}
					ok, err := confirmACLDelete(cmd.InOrStdin(), cmd.ErrOrStderr(), found)
					if err != nil {
						return err
					}
					if !ok {
						fmt.Fprintln(cmd.OutOrStdout(), "Not confirmed; nothing deleted.")
						return nil
					}
				}
				res, err := adm.DeleteACLs(ctx, sel.filterBuilder())
				if err != nil {
					return err
				}
				var deleted []aclEntry
				var failed []aclFailure
				for _, r := range res {
					if r.Err != nil {
						failed = append(failed, aclFailure{err: kafkaErr(r.Err, r.ErrMessage)})
						continue
					}
					for _, d := range r.Deleted {
						e := aclEntry{Type: d.Type, Name: d.Name, Pattern: d.Pattern, Principal: d.Principal,
							Host: d.Host, Operation: d.Operation, Permission: d.Permission}
						if d.Err != nil {
							failed = append(failed, aclFailure{e, kafkaErr(d.Err, d.ErrMessage)})
							continue
						}
						deleted = append(deleted, e)
					}
				}
				if len(deleted) > 0 {
					if err := printACLs(cmd.OutOrStdout(), "Deleted", deleted); err != nil {
						return err
					}
				} else if len(failed) == 0 {
					fmt.Fprintln(cmd.OutOrStdout(), "No ACLs match; nothing deleted.")
				}
				return aclFailuresErr("deleting", failed)
			})
		},
	}
	f := cmd.Flags()
	a.addResourceFlags(f, "which resource names --topic, --group and --transactional-id select: literal,\n"+
		"prefixed, any (both) or match (every ACL that applies to that name)")
	a.addPrincipalFlags(f, "(default: any host)")
	f.StringSliceVar(&a.operations, "operation", nil, "delete only the ACLs of this operation ("+operationHelp+"); repeatable")
	f.BoolVar(&a.force, "force", false, "delete without asking for confirmation")
	return cmd
}

// describeACLs returns the ACLs sel selects, sorted and distinct, or the
// first error the broker answered.
func describeACLs(ctx context.Context, adm *kadm.Client, sel aclSelection) ([]aclEntry, error) {
	res, err := adm.DescribeACLs(ctx, sel.filterBuilder())
	if err != nil {
		return nil, err
	}
	var found []aclEntry
	for _, r := range res {
		if r.Err != nil {
			return nil, fmt.Errorf("listing ACLs: %w", kafkaErr(r.Err, r.ErrMessage))
		}
		for _, d := range r.Described {
			found = append(found, aclEntry{Type: d.Type, Name: d.Name, Pattern: d.Pattern, Principal: d.Principal,
				Host: d.Host, Operation: d.Operation, Permission: d.Permission})
		}
	}
	return sortACLEntries(found), nil
}

// confirmACLDelete shows the ACLs about to be deleted on w and reads the
// answer, a line, from r: true for y or yes. Without an answer (standard
// input at its end, as in a script) it fails, pointing at --force.
func confirmACLDelete(r io.Reader, w io.Writer, found []aclEntry) (bool, error) {
	if err := printACLs(w, "About to delete", found); err != nil {
		return false, err
	}
	fmt.Fprint(w, "Are you sure you want to delete these ACLs? (y/n) ")
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && (!errors.Is(err, io.EOF) || line == "") {
		fmt.Fprintln(w)
		return false, fmt.Errorf("no confirmation on standard input (%v): nothing deleted; pass --force to delete without asking", err)
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, nil
	}
	return false, nil
}

// aclFailure is an ACL (zero for a whole filter) and why the broker
// refused it.
type aclFailure struct {
	acl aclEntry
	err error
}

// aclFailuresErr joins the failures of a create or delete, one error per
// distinct message: a refusal of the whole request (SECURITY_DISABLED,
// CLUSTER_AUTHORIZATION_FAILED) comes once, not once per ACL or filter.
func aclFailuresErr(verb string, failed []aclFailure) error {
	var msgs []string
	byMsg := map[string][]aclFailure{}
	for _, f := range failed {
		m := f.err.Error()
		if _, seen := byMsg[m]; !seen {
			msgs = append(msgs, m)
		}
		byMsg[m] = append(byMsg[m], f)
	}
	var errs []error
	for _, m := range msgs {
		fs := byMsg[m]
		switch {
		case fs[0].acl == aclEntry{}:
			errs = append(errs, fmt.Errorf("%s ACLs: %w", verb, fs[0].err))
		case len(fs) == 1:
			errs = append(errs, fmt.Errorf("%s ACL %s: %w", verb, fs[0].acl, fs[0].err))
		default:
			errs = append(errs, fmt.Errorf("%s %d ACLs (%s, ...): %w", verb, len(fs), fs[0].acl, fs[0].err))
		}
	}
	return errors.Join(errs...)
}

// aclResources are the resources ACLs are created for or filtered on.
type aclResources struct {
	Topics, Groups, TxnIDs []string
	Cluster                bool
}

func (r aclResources) empty() bool {
	return len(r.Topics) == 0 && len(r.Groups) == 0 && len(r.TxnIDs) == 0 && !r.Cluster
}

// aclSelection is what one CreateAcls, or one DescribeAcls or DeleteAcls
// filter, asks for: Allow and Deny principals, from their hosts, get (or
// are matched on) Ops on Resources.
type aclSelection struct {
	Resources aclResources
	Pattern   kadm.ACLPattern
	// Allow and Deny are principals. For a filter, both nil match any
	// principal and permission, and nil hosts match any host.
	Allow, AllowHosts, Deny, DenyHosts []string
	// Ops are the operations; for a filter, nil matches any.
	Ops []kmsg.ACLOperation
}

// createBuilder returns the builder of the ACLs s creates. Hosts not given
// are *, as kafka-acls.sh's.
func (s aclSelection) createBuilder() *kadm.ACLBuilder {
	return kadm.NewACLs().
		MaybeTopics(s.Resources.Topics...).MaybeGroups(s.Resources.Groups...).
		MaybeTransactionalIDs(s.Resources.TxnIDs...).MaybeClusters(s.Resources.Cluster).
		MaybeAllow(s.Allow...).MaybeAllowHosts(s.AllowHosts...).
		MaybeDeny(s.Deny...).MaybeDenyHosts(s.DenyHosts...).
		Operations(s.Ops...).ResourcePatternType(s.Pattern)
}

// filterBuilder returns the builder of the filter s describes or deletes
// with.
func (s aclSelection) filterBuilder() *kadm.ACLBuilder {
	b := kadm.NewACLs().ResourcePatternType(s.Pattern).Operations(s.Ops...)
	if s.Resources.empty() {
		b.AnyResource()
	} else {
		b.MaybeTopics(s.Resources.Topics...).MaybeGroups(s.Resources.Groups...).
			MaybeTransactionalIDs(s.Resources.TxnIDs...).MaybeClusters(s.Resources.Cluster)
	}
	if s.Allow == nil && s.Deny == nil {
		return b.Allow().AllowHosts().Deny().DenyHosts()
	}
	// AllowHosts() and DenyHosts() without hosts match any host.
	return b.MaybeAllow(s.Allow...).AllowHosts(s.AllowHosts...).MaybeDeny(s.Deny...).DenyHosts(s.DenyHosts...)
}

// resources returns the flags' resources.
func (a *aclFlags) resources() aclResources {
	return aclResources{Topics: a.topics, Groups: a.groups, TxnIDs: a.txnIDs, Cluster: a.cluster}
}

const needResource = "name a resource with --topic, --group, --transactional-id or --cluster"

// createSelections checks create's flags and returns what to create: one
// selection per resource type, each with its operations.
func (a *aclFlags) createSelections() ([]aclSelection, error) {
	pattern, err := parseACLPattern(a.pattern, false)
	if err != nil {
		return nil, err
	}
	res := a.resources()
	if res.empty() {
		return nil, errors.New(needResource)
	}
	if res.Cluster && pattern != kadm.ACLPatternLiteral {
		return nil, errors.New("--cluster takes only --resource-pattern-type literal: the cluster resource is named kafka-cluster")
	}
	if len(a.allow) == 0 && len(a.deny) == 0 {
		return nil, errors.New("name whom the ACLs are for with --allow-principal or --deny-principal")
	}
	if err := a.checkPrincipals(); err != nil {
		return nil, err
	}
	ops, err := parseACLOperations(a.operations)
	if err != nil {
		return nil, err
	}
	base := aclSelection{Pattern: pattern, Allow: a.allow, AllowHosts: a.allowHosts, Deny: a.deny, DenyHosts: a.denyHosts}

	if !a.producer && !a.consumer {
		if len(ops) == 0 {
			return nil, errors.New("name the operations with --operation (" + operationHelp + "), or use --producer or --consumer")
		}
		var sels []aclSelection
		for _, typed := range splitResources(res) {
			if err := checkACLOperations(typed.typ, ops); err != nil {
				return nil, err
			}
			s := base
			s.Resources, s.Ops = typed.res, ops
			sels = append(sels, s)
		}
		return sels, nil
	}

	if len(ops) > 0 {
		return nil, errors.New("--operation does not go with --producer or --consumer, which choose the operations")
	}
	if res.Cluster {
		return nil, errors.New("--cluster does not go with --producer or --consumer")
	}
	if len(res.Topics) == 0 {
		return nil, errors.New("--producer and --consumer need the topics, with --topic")
	}
	if a.consumer && len(res.Groups) == 0 {
		return nil, errors.New("--consumer needs the consumer groups, with --group")
	}
	if !a.consumer && len(res.Groups) > 0 {
		return nil, errors.New("--group goes with --consumer, not --producer alone")
	}
	if !a.producer && len(res.TxnIDs) > 0 {
		return nil, errors.New("--transactional-id goes with --producer, not --consumer alone")
	}
	var topicOps []kmsg.ACLOperation
	if a.producer {
		topicOps = append(topicOps, kmsg.ACLOperationWrite, kmsg.ACLOperationDescribe, kmsg.ACLOperationCreate)
	}
	if a.consumer {
		topicOps = append(topicOps, kmsg.ACLOperationRead, kmsg.ACLOperationDescribe)
	}
	slices.Sort(topicOps)
	topics := base
	topics.Resources, topics.Ops = aclResources{Topics: res.Topics}, slices.Compact(topicOps)
	sels := []aclSelection{topics}
	if a.consumer {
		s := base
		s.Resources, s.Ops = aclResources{Groups: res.Groups}, []kmsg.ACLOperation{kmsg.ACLOperationRead}
		sels = append(sels, s)
	}
	if len(res.TxnIDs) > 0 {
		s := base
		s.Resources, s.Ops = aclResources{TxnIDs: res.TxnIDs}, []kmsg.ACLOperation{kmsg.ACLOperationWrite, kmsg.ACLOperationDescribe}
		sels = append(sels, s)
	}
	return sels, nil
}

// listSelection checks list's flags and returns its filter.
func (a *aclFlags) listSelection() (aclSelection, error) {
	pattern, err := parseACLPattern(a.pattern, true)
	if err != nil {
		return aclSelection{}, err
	}
	res := a.resources()
	if res.empty() && !a.patternSet {
		pattern = kadm.ACLPatternAny
	}
	if res.Cluster && pattern == kadm.ACLPatternPrefixed {
		return aclSelection{}, errors.New("--cluster does not go with --resource-pattern-type prefixed: the cluster resource is the literal kafka-cluster")
	}
	for _, p := range a.principals {
		if err := checkPrincipal("--principal", p); err != nil {
			return aclSelection{}, err
		}
	}
	ops, err := parseACLOperations(a.operations)
	if err != nil {
		return aclSelection{}, err
	}
	s := aclSelection{Resources: res, Pattern: pattern, Ops: ops}
	if len(a.principals) > 0 {
		s.Allow, s.Deny = a.principals, a.principals
	}
	return s, nil
}

// deleteSelection checks delete's flags and returns its filter.
func (a *aclFlags) deleteSelection() (aclSelection, error) {
	pattern, err := parseACLPattern(a.pattern, true)
	if err != nil {
		return aclSelection{}, err
	}
	res := a.resources()
	if res.empty() {
		return aclSelection{}, errors.New(needResource + " (to delete every ACL, name each of them)")
	}
	if res.Cluster && pattern == kadm.ACLPatternPrefixed {
		return aclSelection{}, errors.New("--cluster does not go with --resource-pattern-type prefixed: the cluster resource is the literal kafka-cluster")
	}
	if err := a.checkPrincipals(); err != nil {
		return aclSelection{}, err
	}
	ops, err := parseACLOperations(a.operations)
	if err != nil {
		return aclSelection{}, err
	}
	return aclSelection{Resources: res, Pattern: pattern, Ops: ops,
		Allow: a.allow, AllowHosts: a.allowHosts, Deny: a.deny, DenyHosts: a.denyHosts}, nil
}

// checkPrincipals checks --allow-principal and --deny-principal and that
// hosts come with principals.
func (a *aclFlags) checkPrincipals() error {
	for _, p := range a.allow {
		if err := checkPrincipal("--allow-principal", p); err != nil {
			return err
		}
	}
	for _, p := range a.deny {
		if err := checkPrincipal("--deny-principal", p); err != nil {
			return err
		}
	}
	if len(a.allowHosts) > 0 && len(a.allow) == 0 {
		return errors.New("--allow-host goes with --allow-principal")
	}
	if len(a.denyHosts) > 0 && len(a.deny) == 0 {
		return errors.New("--deny-host goes with --deny-principal")
	}
	return nil
}

// checkPrincipal checks that p is Type:name.
func checkPrincipal(flag, p string) error {
	if typ, name, ok := strings.Cut(p, ":"); !ok || strings.TrimSpace(typ) == "" || name == "" {
		return fmt.Errorf("invalid %s %q: want Type:name, as User:alice or User:*", flag, p)
	}
	return nil
}

// aclOperationNames maps the normalized names of the operations ACLs are
// made of (kafka-acls.sh's, without case, '_' or '-') to them.
var aclOperationNames = map[string]kmsg.ACLOperation{
	"read": kmsg.ACLOperationRead, "write": kmsg.ACLOperationWrite, "create": kmsg.ACLOperationCreate,
	"delete": kmsg.ACLOperationDelete, "alter": kmsg.ACLOperationAlter, "describe": kmsg.ACLOperationDescribe,
	"clusteraction": kmsg.ACLOperationClusterAction, "describeconfigs": kmsg.ACLOperationDescribeConfigs,
	"alterconfigs": kmsg.ACLOperationAlterConfigs, "idempotentwrite": kmsg.ACLOperationIdempotentWrite,
	"all": kmsg.ACLOperationAll,
}

// parseACLOperations parses --operation values, case-insensitively, into
// sorted distinct operations (nil for none).
func parseACLOperations(names []string) ([]kmsg.ACLOperation, error) {
	var ops []kmsg.ACLOperation
	for _, n := range names {
		norm := strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(strings.TrimSpace(n)))
		op, ok := aclOperationNames[norm]
		if !ok {
			return nil, fmt.Errorf("invalid --operation %q: want %s", n, operationHelp)
		}
		ops = append(ops, op)
	}
	slices.Sort(ops)
	return slices.Compact(ops), nil
}

// parseACLPattern parses --resource-pattern-type: literal or prefixed, and
// for filters also any or match.
func parseACLPattern(s string, filter bool) (kadm.ACLPattern, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "literal":
		return kadm.ACLPatternLiteral, nil
	case "prefixed":
		return kadm.ACLPatternPrefixed, nil
	case "any":
		if filter {
			return kadm.ACLPatternAny, nil
		}
	case "match":
		if filter {
			return kadm.ACLPatternMatch, nil
		}
	}
	if filter {
		return 0, fmt.Errorf("invalid --resource-pattern-type %q: want literal, prefixed, any or match", s)
	}
	return 0, fmt.Errorf("invalid --resource-pattern-type %q: want literal or prefixed (any and match only filter, for list and delete)", s)
}

// aclTypeOps are the operations each resource type's ACLs may grant
// besides All, as kafka-acls.sh checks them.
var aclTypeOps = map[kmsg.ACLResourceType][]kmsg.ACLOperation{
	kmsg.ACLResourceTypeTopic: {kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate, kmsg.ACLOperationDelete,
		kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe, kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs},
	kmsg.ACLResourceTypeGroup: {kmsg.ACLOperationRead, kmsg.ACLOperationDelete, kmsg.ACLOperationDescribe},
	kmsg.ACLResourceTypeCluster: {kmsg.ACLOperationCreate, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe, kmsg.ACLOperationClusterAction,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationIdempotentWrite},
	kmsg.ACLResourceTypeTransactionalId: {kmsg.ACLOperationWrite, kmsg.ACLOperationDescribe},
}

// checkACLOperations fails if an operation does not apply to typ.
func checkACLOperations(typ kmsg.ACLResourceType, ops []kmsg.ACLOperation) error {
	valid := aclTypeOps[typ]
	for _, op := range ops {
		if op != kmsg.ACLOperationAll && !slices.Contains(valid, op) {
			names := []string{"ALL"}
			for _, v := range valid {
				names = append(names, v.String())
			}
			return fmt.Errorf("operation %s does not apply to %s resources, which take %s", op, typ, strings.Join(names, ", "))
		}
	}
	return nil
}

// typedResources are the resources of one type.
type typedResources struct {
	typ kmsg.ACLResourceType
	res aclResources
}

// splitResources splits r by resource type.
func splitResources(r aclResources) []typedResources {
	var out []typedResources
	if len(r.Topics) > 0 {
		out = append(out, typedResources{kmsg.ACLResourceTypeTopic, aclResources{Topics: r.Topics}})
	}
	if len(r.Groups) > 0 {
		out = append(out, typedResources{kmsg.ACLResourceTypeGroup, aclResources{Groups: r.Groups}})
	}
	if r.Cluster {
		out = append(out, typedResources{kmsg.ACLResourceTypeCluster, aclResources{Cluster: true}})
	}
	if len(r.TxnIDs) > 0 {
		out = append(out, typedResources{kmsg.ACLResourceTypeTransactionalId, aclResources{TxnIDs: r.TxnIDs}})
	}
	return out
}
