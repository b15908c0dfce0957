"""Connected accounts: a remote server's OAuth sign-in, per person (or shared by a tenant,
or the client's own credentials), used on every request to that server."""
