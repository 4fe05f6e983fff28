// Package kptengine does to package files what real Porch does to them:
// the clone task, the upgrade task with the resource-merge strategy, and
// the render of a package's Kptfile pipeline that follows every create and
// every resources update.
//
// It is built on the kpt libraries Porch itself uses (kptops, update,
// addmergecomment) and on the Go modules of the functions Porch runs
// without a function runner (set-namespace, apply-replacements, starlark),
// so that porchsim and variantctl produce the files real Porch would store,
// byte for byte where that has been measured.
//
// The module proxy serves kpt v1.0.0-beta.61 while Porch is built with
// v1.0.0-beta.62.1. The differences that show in package files are made up
// for here:
//   - beta.62.1 records the outcome of a render in the root Kptfile
//     (status.conditions Rendered and status.renderStatus, the Kptfile then
//     re-marshalled); beta.61 does not, so Render writes both itself, from
//     the per-function results beta.61 returns.
//   - beta.61 refuses a Kptfile carrying status.renderStatus (it decodes
//     Kptfiles with unknown fields forbidden), and Porch writes that field
//     into every package it renders; the field is taken out before a Kptfile
//     is handed to beta.61 and put back (or replaced) afterwards.
//   - beta.61's builtins.GetBuiltinFn prints to standard output, which
//     carries variantctl's output; the package context Porch generates on a
//     clone into a deployment repository is produced here instead, through
//     the same kyaml function machinery, with the same content.
//
// Every function of the package is pure with respect to its arguments:
// files go in as a map from path to content and come out as a new map.
package kptengine
