
/*
 * ngx_http_mcp_files_module: reading the files of a tree (resources/read)
 * and watching them (watch=).
 *
 * A read never trusts the path: it walks from the root with openat(),
 * one component at a time, with O_NOFOLLOW, so that no symbolic link is
 * followed, whenever it was made; names that begin with a dot ("..",
 * ".git") are never read.  The last component must be a regular file
 * before it is opened (fstatat) and after (fstat, the same inode), and
 * it is opened with O_NONBLOCK: a FIFO swapped in between cannot block
 * the worker, a device is never opened.  The size fstat() saw is read,
 * bounded by max_size; a larger file is refused before any byte.
 *
 * watch= polls: one worker (worker 0) stats the listed files every
 * interval and tells the subscribers of a changed one with
 * ngx_http_mcp_resource_updated(), which reaches every subscribed
 * session of every worker once; so one poller means one notification.
 * An old worker of a reload stops polling as soon as it is told to
 * exit, the new worker 0 starts from the state of the new scan.
 */


#include "ngx_http_mcp_files.h"


static ngx_uint_t ngx_http_mcp_files_is_text(ngx_str_t *type);
static ngx_int_t ngx_http_mcp_files_path(ngx_pool_t *pool,
    ngx_http_mcp_tree_t *tree, ngx_str_t *uri, ngx_str_t *path);
static ngx_fd_t ngx_http_mcp_files_open(ngx_http_mcp_tree_t *tree,
    u_char *path, ngx_file_info_t *fi, ngx_log_t *log);
static void ngx_http_mcp_files_refused(ngx_http_mcp_tree_t *tree,
    u_char *path, ngx_log_t *log, ngx_err_t err);
static ngx_int_t ngx_http_mcp_files_reply(ngx_http_mcp_call_t *call,
    ngx_http_mcp_tree_t *tree, ngx_str_t *path, u_char *data, size_t len);


/* the MIME type nginx would send for path: "types", then default_type */

void
ngx_http_mcp_files_type(ngx_http_mcp_tree_t *tree, ngx_str_t *path,
    ngx_str_t *type)
{
    u_char                    *p, *ext, lc[32];
    size_t                     len;
    ngx_str_t                 *t;
    ngx_uint_t                 hash;
    ngx_http_core_loc_conf_t  *clcf;

    clcf = tree->clcf;

    ext = NULL;

    for (p = path->data + path->len; p > path->data; p--) {
        if (p[-1] == '/') {
            break;
        }

        if (p[-1] == '.') {
            ext = p;
            break;
        }
    }

    len = ext ? (size_t) (path->data + path->len - ext) : 0;

    if (len && len < sizeof(lc) && clcf->types_hash.buckets) {
        hash = ngx_hash_strlow(lc, ext, len);

        t = ngx_hash_find(&clcf->types_hash, hash, lc, len);

        if (t != NULL) {
            *type = *t;
            return;
        }
    }

    if (clcf->default_type.len) {
        *type = clcf->default_type;
        return;
    }

    ngx_str_set(type, "application/octet-stream");
}


static ngx_uint_t
ngx_http_mcp_files_is_text(ngx_str_t *type)
{
    size_t       n;
    ngx_uint_t   i;

    static ngx_str_t  text[] = {
        ngx_string("text/"),
        ngx_string("application/json"),
        ngx_string("application/xml"),
        ngx_string("application/javascript"),
        ngx_string("application/x-javascript"),
        ngx_string("application/yaml"),
        ngx_string("application/x-yaml"),
        ngx_string("application/toml"),
        ngx_string("application/x-sh"),
        ngx_null_string
    };

    for (i = 0; text[i].len; i++) {
        if (type->len >= text[i].len
            && ngx_strncasecmp(type->data, text[i].data, text[i].len) == 0)
        {
            return 1;
        }
    }

    /* image/svg+xml, application/ld+json, ... */

    for (n = 0; n < type->len && type->data[n] != ';'; n++) {
        if (type->data[n] == '+') {
            return ngx_strncasecmp(type->data + n, (u_char *) "+json", 5) == 0
                   || ngx_strncasecmp(type->data + n, (u_char *) "+xml", 4)
                      == 0
                   || ngx_strncasecmp(type->data + n, (u_char *) "+yaml", 5)
                      == 0;
        }
    }

    return 0;
}


/* resources/read of a file, listed or through the template */

ngx_int_t
ngx_http_mcp_files_read(ngx_http_mcp_call_t *call)
{
    u_char               *data, msg[160];
    size_t                len;
    ssize_t               n, r;
    ngx_fd_t              fd;
    ngx_int_t             rc;
    ngx_str_t             path;
    ngx_log_t            *log;
    ngx_pool_t           *pool;
    ngx_file_info_t       fi;
    ngx_http_mcp_tree_t  *tree;

    tree = ngx_http_mcp_call_entry_data(call);
    pool = ngx_http_mcp_call_pool(call);
    log = ngx_http_mcp_call_get_log(call);

    rc = ngx_http_mcp_files_path(pool, tree, ngx_http_mcp_call_uri(call),
                                 &path);

    if (rc != NGX_OK) {
        if (rc == NGX_ERROR) {
            return NGX_ERROR;
        }

        ngx_http_mcp_call_resource_not_found(call);
        return NGX_OK;
    }

    fd = ngx_http_mcp_files_open(tree, path.data, &fi, log);

    if (fd == NGX_INVALID_FILE) {
        ngx_http_mcp_call_resource_not_found(call);
        return NGX_OK;
    }

    if (ngx_file_size(&fi) > (off_t) tree->max_size) {
        (void) ngx_close_file(fd);

        *ngx_snprintf(msg, sizeof(msg) - 1,
                      "Resource too large: %O bytes, more than the %uz "
                      "bytes of max_size", ngx_file_size(&fi),
                      tree->max_size) = '\0';

        /* the operator's limit, not a fault: a server error, at "info" */

        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_SERVER_ERROR,
                                (char *) msg);
        return NGX_OK;
    }

    /* the size fstat() saw: a file that grows is cut there */

    len = (size_t) ngx_file_size(&fi);

    data = ngx_pnalloc(pool, len + 1);
    if (data == NULL) {
        (void) ngx_close_file(fd);
        return NGX_ERROR;
    }

    for (n = 0; (size_t) n < len; /* void */) {
        r = pread(fd, data + n, len - n, n);

        if (r == -1 && ngx_errno == NGX_EINTR) {
            continue;
        }

        if (r <= 0) {
            break;
        }

        n += r;
    }

    (void) ngx_close_file(fd);

    if ((size_t) n < len) {
        ngx_log_error(NGX_LOG_INFO, log, ngx_errno,
                      "mcp resources: \"%s\" shrank or failed while read",
                      path.data);
        len = n;
    }

    data[len] = '\0';

    return ngx_http_mcp_files_reply(call, tree, &path, data, len);
}


/*
 * The path below the root that uri names: PREFIX stripped, decoded once,
 * and checked: no empty component, none beginning with a dot, no NUL.
 */

static ngx_int_t
ngx_http_mcp_files_path(ngx_pool_t *pool, ngx_http_mcp_tree_t *tree,
    ngx_str_t *uri, ngx_str_t *path)
{
    u_char  *s, *last, *d, c, *start;

    if (uri->len <= tree->prefix.len
        || uri->len - tree->prefix.len >= NGX_HTTP_MCP_FILES_PATH
        || ngx_strncmp(uri->data, tree->prefix.data, tree->prefix.len) != 0)
    {
        return NGX_DECLINED;
    }

    s = uri->data + tree->prefix.len;
    last = uri->data + uri->len;

    d = ngx_pnalloc(pool, last - s + 1);
    if (d == NULL) {
        return NGX_ERROR;
    }

    path->data = d;

    while (s < last) {
        c = *s++;

        if (c == '%') {
            if (last - s < 2
                || ngx_hextoi(s, 2) == NGX_ERROR)
            {
                return NGX_DECLINED;
            }

            c = (u_char) ngx_hextoi(s, 2);
            s += 2;
        }

        if (c == '\0') {
            return NGX_DECLINED;
        }

        *d++ = c;
    }

    *d = '\0';
    path->len = d - path->data;

    start = path->data;

    for (s = path->data; s <= d; s++) {
        if (s == d || *s == '/') {
            if (s == start || *start == '.') {
                return NGX_DECLINED;
            }

            start = s + 1;
        }
    }

    return NGX_OK;
}


/*
 * Opens path below the root without following a symbolic link anywhere
 * (O_NOFOLLOW on every component), a regular file only.
 */

static ngx_fd_t
ngx_http_mcp_files_open(ngx_http_mcp_tree_t *tree, u_char *path,
    ngx_file_info_t *fi, ngx_log_t *log)
{
    u_char           *p, *slash;
    ngx_fd_t          dir, fd;
    ngx_err_t         err;
    ngx_file_info_t   lfi;

    dir = open((char *) tree->root.data, O_RDONLY|O_DIRECTORY|O_CLOEXEC);
    if (dir == NGX_INVALID_FILE) {
        ngx_log_error(NGX_LOG_ERR, log, ngx_errno,
                      "mcp resources: open() \"%V\" failed", &tree->root);
        return NGX_INVALID_FILE;
    }

    fd = NGX_INVALID_FILE;

    for (p = path; /* void */; p = slash + 1) {
        slash = (u_char *) ngx_strchr(p, '/');

        if (slash == NULL) {
            break;
        }

        *slash = '\0';
        fd = openat(dir, (char *) p,
                    O_RDONLY|O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC);
        *slash = '/';

        (void) close(dir);

        if (fd == NGX_INVALID_FILE) {
            err = ngx_errno;
            goto failed;
        }

        dir = fd;
        fd = NGX_INVALID_FILE;
    }

    /* neither a FIFO, nor a device, is ever opened, let alone waited on */

    if (fstatat(dir, (char *) p, &lfi, AT_SYMLINK_NOFOLLOW) == -1) {
        err = ngx_errno;
        (void) close(dir);
        goto failed;
    }

    if (!S_ISREG(lfi.st_mode)) {
        (void) close(dir);
        err = 0;
        goto failed;
    }

    fd = openat(dir, (char *) p,
                O_RDONLY|O_NOFOLLOW|O_NONBLOCK|O_NOCTTY|O_CLOEXEC);
    err = ngx_errno;

    (void) close(dir);

    if (fd == NGX_INVALID_FILE) {
        goto failed;
    }

    if (ngx_fd_info(fd, fi) == NGX_FILE_ERROR
        || !S_ISREG(fi->st_mode)
        || fi->st_ino != lfi.st_ino
        || fi->st_dev != lfi.st_dev)
    {
        (void) close(fd);
        err = 0;
        goto failed;
    }

    return fd;

failed:

    ngx_http_mcp_files_refused(tree, path, log, err);

    return NGX_INVALID_FILE;
}


/*
 * A client can name any path: why it is refused goes to the debug log
 * only.  A function of its own, so that err is read in a build without
 * --with-debug as well, where ngx_log_debug*() is empty.
 */

static void
ngx_http_mcp_files_refused(ngx_http_mcp_tree_t *tree, u_char *path,
    ngx_log_t *log, ngx_err_t err)
{
    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, log, err,
                   "mcp resources: \"%s\" below \"%V\" refused",
                   path, &tree->root);
}


/* {"contents": [{"uri", "mimeType", "text" or "blob"}]} */

static ngx_int_t
ngx_http_mcp_files_reply(ngx_http_mcp_call_t *call,
    ngx_http_mcp_tree_t *tree, ngx_str_t *path, u_char *data, size_t len)
{
    u_char      *mime;
    cJSON       *result, *contents, *item;
    ngx_str_t    type, src, dst;
    ngx_uint_t   text;

    ngx_http_mcp_files_type(tree, path, &type);

    mime = ngx_pnalloc(ngx_http_mcp_call_pool(call), type.len + 1);
    if (mime == NULL) {
        return NGX_ERROR;
    }

    *ngx_cpymem(mime, type.data, type.len) = '\0';

    /* text that is no UTF-8 would not be JSON: it goes as a blob */

    text = ngx_http_mcp_files_is_text(&type)
           && ngx_http_mcp_prompt_utf8(data, len);

    if (!text) {
        src.data = data;
        src.len = len;

        dst.data = ngx_pnalloc(ngx_http_mcp_call_pool(call),
                               ngx_base64_encoded_length(len) + 1);
        if (dst.data == NULL) {
            return NGX_ERROR;
        }

        ngx_encode_base64(&dst, &src);
        dst.data[dst.len] = '\0';
        data = dst.data;
    }

    result = cJSON_CreateObject();
    contents = cJSON_AddArrayToObject(result, "contents");
    item = cJSON_CreateObject();

    if (contents == NULL || !cJSON_AddItemToArray(contents, item)) {
        cJSON_Delete(item);
        cJSON_Delete(result);
        return NGX_ERROR;
    }

    if (cJSON_AddStringToObject(item, "uri",
                                (char *) ngx_http_mcp_call_uri(call)->data)
        == NULL
        || cJSON_AddStringToObject(item, "mimeType", (char *) mime) == NULL
        || cJSON_AddStringToObject(item, text ? "text" : "blob",
                                   (char *) data) == NULL)
    {
        cJSON_Delete(result);
        return NGX_ERROR;
    }

    ngx_http_mcp_call_result(call, result);

    return NGX_OK;
}


void
ngx_http_mcp_files_poll(ngx_event_t *ev)
{
    ngx_http_mcp_files_main_conf_t *fmcf = ev->data;

    ngx_uint_t             i, k;
    ngx_msec_t             now;
    ngx_file_info_t        fi;
    ngx_http_mcp_file_t   *f, old;
    ngx_http_mcp_tree_t  **tree;

    /* an old worker of a reload: the new worker 0 polls */

    if (ngx_exiting || ngx_quit || ngx_terminate) {
        return;
    }

    now = ngx_current_msec;
    tree = fmcf->trees.elts;

    for (i = 0; i < fmcf->trees.nelts; i++) {

        /* a tree of a longer interval than the timer's: not every time */

        if (tree[i]->watch == 0
            || now - tree[i]->polled + fmcf->watch / 2 < tree[i]->watch)
        {
            continue;
        }

        tree[i]->polled = now;
        f = tree[i]->files.elts;

        for (k = 0; k < tree[i]->files.nelts; k++) {
            old = f[k];

            if (ngx_link_info(f[k].path.data, &fi) == NGX_FILE_ERROR) {
                ngx_memzero(&fi, sizeof(ngx_file_info_t));
            }

            ngx_http_mcp_files_stamp(&f[k], &fi);

            if (old.ino == f[k].ino && old.size == f[k].size
                && old.mtime == f[k].mtime && old.mtime_ns == f[k].mtime_ns)
            {
                continue;
            }

            ngx_log_debug1(NGX_LOG_DEBUG_HTTP, ev->log, 0,
                           "mcp resources: \"%V\" changed", &f[k].uri);

            (void) ngx_http_mcp_resource_updated(&f[k].uri);
        }
    }

    ngx_add_timer(ev, fmcf->watch);
}


void
ngx_http_mcp_files_stamp(ngx_http_mcp_file_t *f, ngx_file_info_t *fi)
{
    f->ino = fi->st_ino;
    f->size = fi->st_size;
    f->mtime = fi->st_mtime;

#if (NGX_LINUX)
    f->mtime_ns = fi->st_mtim.tv_nsec;
#else
    f->mtime_ns = 0;
#endif
}
