// Package celtemplate evaluates the CEL expressions (the fields ending in
// Expr) of a PackageVariantSet template for one target.
//
// Expressions see five variables, as the design document lists them:
// repoDefault and packageDefault (strings), and upstream, repository and
// target. Of a Kubernetes object an expression sees only name, namespace
// (strings), labels and annotations (maps of strings, empty rather than
// null); the rest of an object may hold data the author of the set should
// not be able to copy into a package. For the same reason annotations that
// hold a serialised object (kubectl.kubernetes.io/last-applied-configuration,
// or any value that is a JSON object with apiVersion and kind) are left out. For a target from a repository/package
// list, target has the fields repo and package instead. The three objects
// are declared with exactly these fields, so reading any other
// (repository.spec, target.foo, upstream['spec']) is a compile error; target
// declares the fields of both kinds, as which kind a template gets is not
// known where its expressions are checked. When evaluated the objects are
// plain maps, so they can still be indexed by field name and tested with in.
// downstream.repoExpr chooses the downstream Repository, so it is evaluated
// before that Repository is known: there the repository variable is not
// declared at all, and a reference to it is a compile error.
//
// Every expression must evaluate to a string. Compiling an expression
// proves what can be proved before a target is known: its type (a result
// known to be a map or a number is refused), its estimated cost (refused
// above the cost limit, for objects with up to 250 labels and as many
// annotations), and, by a dry run with every variable unknown, that it does
// not fail, or yield something other than a string, whatever the target
// (1/0 is refused; 10 / size(repository.labels) is not, and fails only when
// evaluated for an object without labels).
//
// The string functions of the CEL extension library (lowerAscii, replace,
// split, substring, trim, join ...) are available, except format and
// strings.quote, whose result CEL can make far larger than their input
// before its cost tracking sees it; replace and join refuse to build a
// string longer than a fixed bound for the same reason. Expressions come from anyone who may create a PackageVariantSet,
// so one expression must not be able to exhaust the controller's memory or
// CPU: expression length, evaluation cost and result length are limited
// (see Options).
//
// A Cache compiles each expression once per set generation and is safe for
// concurrent use. Every error it returns is an *Error naming the field.
package celtemplate
