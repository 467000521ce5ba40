# docs/api.md: "Files are named relative to the knowledge-base folder (`animals.clp`), never by the server's absolute path."
# Actual: PUT /v1/kb/{name} error details name the file as the server sees it.
#  WORKBENCH_KNOWLEDGE_BASE_DIR=/tmp/rev17_kb  -> "file": "/tmp/rev17_kb/zz.clp"   (absolute server path)
#  default settings                            -> "file": "knowledge_bases/zz.clp"  (relative to the server's cwd, not the folder)
# (POST /v1/kb/{name}/check names it "zz.clp" as documented.)
curl -s -X PUT 127.0.0.1:8000/v1/kb/zz -H 'Authorization: Bearer KEY' -H 'Content-Type: text/plain' --data-binary '(defrule s (a) =>'
