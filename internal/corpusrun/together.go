package main

import (
	"fmt"
	"path/filepath"
)

// together names, for a corpus file, the sibling files deployed with it
// ("goxpdl validate FILE WITH..." and "goxpdl run FILE WITH..."): the
// processes its SubFlows call are theirs. The Bonita tests deploy these
// together (SOURCES.md of the corpus; bonita-tests SubflowTest, AsyncTest,
// MultiInstantiationTest). The table is explicit, not guessed from the
// references, as xpdl/corpus_test.go's corpusDeployed, which it mirrors.
type together struct {
	// File and With are paths inside the corpus.
	File string
	With []string
}

// deployedTogether is the corpus run's whole table. An entry that names a
// file the corpus does not have is an error, so the table cannot go
// stale.
var deployedTogether = []together{
	{File: "xpdl1/bonita-asyncSubParent.xpdl", With: []string{"xpdl1/bonita-asyncSubChild.xpdl"}},
	{File: "xpdl1/bonita-main_variables_proed.xpdl", With: []string{"xpdl1/bonita-subflow_proed_variables.xpdl"}},
	{File: "xpdl1/bonita-nestedSubflow.xpdl", With: []string{"xpdl1/bonita-nestedSubflow-sub.xpdl", "xpdl1/bonita-nestedSubflow-nestedSub.xpdl"}},
	{File: "xpdl1/bonita-nestedSubflow-sub.xpdl", With: []string{"xpdl1/bonita-nestedSubflow-nestedSub.xpdl"}},
	{File: "xpdl1/bonita-subflowMultiInstantiation-mainCondPass.xpdl", With: []string{"xpdl1/bonita-subflowMultiInstantiation-sub.xpdl"}},
	{File: "xpdl1/bonita-subflowParams.xpdl", With: []string{"xpdl1/bonita-subflowParams-sub.xpdl"}},
}

// notInCorpus are the Bonita parents whose children the corpus lacks:
// they stay invalid, and the report says why.
var notInCorpus = []struct{ File, Reason string }{
	{"xpdl1/bonita-subflow.xpdl", "its test deploys subflow-sub.xpdl (process `subflow`), which is not in the corpus; three other files define a process `subflow`, but none is the one the test deploys"},
	{"xpdl1/bonita-mainSubflowJoinXor.xpdl", "calls process `subflowWithTask`, whose file is not in the corpus"},
}

// withFor returns the files deployed with a corpus file (its Rel), or nil.
func withFor(rel string) []string {
	for _, t := range deployedTogether {
		if t.File == rel {
			return t.With
		}
	}
	return nil
}

// checkTogether fails if the table names a file the corpus does not have.
func checkTogether(files []*corpusFile) error {
	have := map[string]bool{}
	for _, f := range files {
		have[f.Rel()] = true
	}
	for _, t := range deployedTogether {
		for _, rel := range append([]string{t.File}, t.With...) {
			if !have[rel] {
				return fmt.Errorf("deployed together with %s: %s is not in the corpus; update together.go", t.File, rel)
			}
		}
	}
	for _, n := range notInCorpus {
		if !have[n.File] {
			return fmt.Errorf("%s is not in the corpus; update together.go", n.File)
		}
	}
	return nil
}

// corpusPaths turns paths inside the corpus into paths the goxpdl
// commands are given.
func corpusPaths(root string, rels []string) []string {
	out := make([]string, len(rels))
	for i, rel := range rels {
		out[i] = filepath.Join(root, filepath.FromSlash(rel))
	}
	return out
}
