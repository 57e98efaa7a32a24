// MathJax 3 is served with the site (javascripts/mathjax/, from the npm package `mathjax`,
// added by scripts/docs/hooks.py): formulas render offline. `boldsymbol` is loaded for the
// bold vectors of the model pages and the notebooks.
window.MathJax = {
  loader: {
    load: ["[tex]/boldsymbol"],
  },
  tex: {
    packages: { "[+]": ["boldsymbol"] },
    inlineMath: [["\\(", "\\)"]],
    displayMath: [["\\[", "\\]"]],
    processEscapes: true,
    processEnvironments: true,
  },
  options: {
    ignoreHtmlClass: ".*|",
    processHtmlClass: "arithmatex",
  },
  svg: {
    fontCache: "global",
  },
};

// Material's instant navigation replaces the page body: typeset each new page.
document$.subscribe(() => {
  if (!window.MathJax.typesetPromise) {
    return; // the first page is typeset by MathJax's own start-up
  }
  MathJax.startup.output.clearCache();
  MathJax.typesetClear();
  MathJax.texReset();
  MathJax.typesetPromise();
});
