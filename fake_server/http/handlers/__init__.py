"""The API's handlers, one module per family of routes (``fake_server.operations`` names each
handler ``"family.name"``): parse the request, call the account, render the reply."""
