// LiveDefaults.docc/LiveDefaults.md's example is whole: it takes nothing as given (it declares its
// own key). Checked by scripts/check-doc-snippets.py.
