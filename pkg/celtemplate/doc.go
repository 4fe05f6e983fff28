// Package celtemplate evaluates the CEL expressions (the fields ending in
// Expr) of a PackageVariantSet template for one target.
//
// Expressions see five variables, as the design document lists them:
// repoDefault and packageDefault (strings), and upstream, repository and
// target, each a map from string to dyn. Of a Kubernetes object an expression
// sees only name, namespace, labels and annotations (labels and annotations
// are empty maps, never null); the rest of an object may hold data the author
// of the set should not be able to copy into a package. For a target from a
// repository/package list, target is a map with the keys repo and package.
// downstream.repoExpr chooses the downstream Repository, so it is evaluated
// before that Repository is known: there the repository variable is not
// declared at all, and a reference to it is a compile error.
//
// Every expression must evaluate to a string. The string functions of the CEL
// extension library (lowerAscii, replace, split, substring, trim, join ...)
// are available, except format and strings.quote, whose result CEL can make
// far larger than their input before its cost tracking sees it; replace and
// join refuse to build a string longer than a fixed bound for the same
// reason. Expressions come from anyone who may create a PackageVariantSet,
// so one expression must not be able to exhaust the controller's memory or
// CPU: expression length, evaluation cost and result length are limited
// (see Options).
//
// A Cache compiles each expression once per set generation and is safe for
// concurrent use. Every error it returns is an *Error naming the field.
package celtemplate
