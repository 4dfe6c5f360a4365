"""The course website, generated from the same sources the grader reads.

`grader site build` turns course.yaml, syllabus.md, README.md, tracks/*.md, days/*/README.md and the glossary
(glossary.yaml plus any days/dayNN/glossary.yaml) into a static site under .grader/site/html; `grader site serve`
serves it on 127.0.0.1 and rebuilds it when a source changes. Nothing in the site is a hand-kept copy of a
lesson. Modules:

  glossary    load, merge and check the glossary files; the glossary page
  graph       the days' dependency graph (course.yaml prerequisites) as an SVG of links
  transform   lesson markdown as written for GitHub -> markdown for the site (alerts, tabs, links, day header)
  term_links  the Python-Markdown extension that turns glossary terms into hover definitions
  generate    the docs tree and mkdocs.yml in the build folder
  build       runs MkDocs (Material theme), collects its warnings, checks the result needs no network
  serve       a local HTTP server with rebuild-on-change

It needs the `site` extra: pip install -e ".[site]".
"""
