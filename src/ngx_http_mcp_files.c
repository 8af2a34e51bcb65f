
/*
 * ngx_http_mcp_files_module: the files under a directory as resources
 * ("mcp_resources DIR uri=PREFIX"), and the module that also carries the
 * prompts from files (ngx_http_mcp_prompts.c).  Built on the public API
 * alone.
 *
 * The tree is scanned at configuration time: the listing is then the
 * registry's own, paginated like any other, and a file added or removed
 * shows on reload, whose new listing hash tells the sessions
 * (list_changed).  A template PREFIX{+path} reaches the files at request
 * time too, so that a file read is always the file as it is now.
 *
 * A read never trusts the path: it walks from the root with openat(),
 * one component at a time, with O_NOFOLLOW, so that no symbolic link is
 * followed, whenever it was made; names that begin with a dot ("..",
 * ".git") are neither listed nor read.  The last component must be a
 * regular file before it is opened (lstat) and after (fstat, the same
 * inode), and it is opened with O_NONBLOCK: a FIFO swapped in between
 * cannot block the worker.
 *
 * "watch=" polls: one worker (worker 0) stats the listed files every
 * interval and tells the subscribers of a changed one; the store
 * delivers one notification per subscribed session, so one poller means
 * one notification.  An old worker stops polling when it is told to
 * exit.
 */


#include "ngx_http_mcp_files.h"


#if (NGX_HTTP_MCP_API_VERSION != 1)
#error "written for version 1 of the ngx_http_mcp_module API"
#endif


#define NGX_HTTP_MCP_FILES_DEPTH     32
#define NGX_HTTP_MCP_FILES_PATH      4096


typedef struct {
    ngx_str_t                  path;      /* full, NUL-terminated */
    ngx_str_t                  rel;       /* in path, after the root */
    ngx_str_t                  uri;
    cJSON                     *desc;      /* the listing object */
    ino_t                      ino;
    off_t                      size;
    time_t                     mtime;
    long                       mtime_ns;
} ngx_http_mcp_file_t;


typedef struct {
    ngx_str_t                  root;      /* no trailing slash, NUL */
    ngx_str_t                  prefix;    /* uri= */
    size_t                     max_size;
    ngx_msec_t                 watch;     /* 0: off */
    ngx_msec_t                 polled;    /* when it was last polled */
    ngx_array_t                files;     /* ngx_http_mcp_file_t */
    ngx_http_core_loc_conf_t  *clcf;      /* types, default_type */
} ngx_http_mcp_tree_t;


/* a set that serves our entries: its completion handler before ours */
typedef struct {
    ngx_http_mcp_set_t        *set;
    ngx_http_mcp_handler_pt    next;
} ngx_http_mcp_files_set_t;


typedef struct {
    ngx_array_t                trees;     /* ngx_http_mcp_tree_t * */
    ngx_array_t                prompts;   /* ngx_http_mcp_prompt_t * */
    ngx_array_t                sets;      /* ngx_http_mcp_files_set_t */
    ngx_msec_t                 watch;     /* the shortest interval */
    ngx_event_t                timer;
} ngx_http_mcp_files_main_conf_t;


static void *ngx_http_mcp_files_create_main_conf(ngx_conf_t *cf);
static ngx_int_t ngx_http_mcp_files_postconfiguration(ngx_conf_t *cf);
static ngx_int_t ngx_http_mcp_files_init_process(ngx_cycle_t *cycle);
static char *ngx_http_mcp_resources(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_mcp_files_args(ngx_conf_t *cf,
    ngx_http_mcp_tree_t *tree);
static char *ngx_http_mcp_prompt(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static ngx_int_t ngx_http_mcp_files_use_set(ngx_conf_t *cf,
    ngx_http_mcp_files_main_conf_t *fmcf, ngx_http_mcp_set_t *set);
static ngx_int_t ngx_http_mcp_files_scan(ngx_conf_t *cf,
    ngx_http_mcp_tree_t *tree, u_char *path, size_t len, ngx_uint_t depth);
static ngx_int_t ngx_http_mcp_files_add(ngx_conf_t *cf,
    ngx_http_mcp_tree_t *tree, u_char *path, size_t len,
    ngx_file_info_t *fi);
static int ngx_libc_cdecl ngx_http_mcp_files_cmp(const void *one,
    const void *two);
static ngx_int_t ngx_http_mcp_files_register(ngx_conf_t *cf,
    ngx_http_mcp_set_t *set, ngx_http_mcp_tree_t *tree);
static size_t ngx_http_mcp_files_escape(u_char *dst, u_char *src,
    size_t len);
static void ngx_http_mcp_files_type(ngx_http_mcp_tree_t *tree,
    ngx_str_t *path, ngx_str_t *type);
static ngx_uint_t ngx_http_mcp_files_is_text(ngx_str_t *type);
static ngx_int_t ngx_http_mcp_files_read(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_files_path(ngx_pool_t *pool,
    ngx_http_mcp_tree_t *tree, ngx_str_t *uri, ngx_str_t *path);
static ngx_fd_t ngx_http_mcp_files_open(ngx_http_mcp_tree_t *tree,
    u_char *path, ngx_file_info_t *fi, ngx_log_t *log);
static ngx_int_t ngx_http_mcp_files_reply(ngx_http_mcp_call_t *call,
    ngx_http_mcp_tree_t *tree, ngx_str_t *path, u_char *data, size_t len);
static void ngx_http_mcp_files_not_found(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_files_complete(ngx_http_mcp_call_t *call);
static void ngx_http_mcp_files_poll(ngx_event_t *ev);
static void ngx_http_mcp_files_stamp(ngx_http_mcp_file_t *f,
    ngx_file_info_t *fi);


static ngx_command_t  ngx_http_mcp_files_commands[] = {

    { ngx_string("mcp_resources"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF
                        |NGX_CONF_2MORE,
      ngx_http_mcp_resources,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("mcp_prompt"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF
                        |NGX_CONF_BLOCK|NGX_CONF_TAKE2,
      ngx_http_mcp_prompt,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_mcp_files_module_ctx = {
    NULL,                                  /* preconfiguration */
    ngx_http_mcp_files_postconfiguration,  /* postconfiguration */

    ngx_http_mcp_files_create_main_conf,   /* create main configuration */
    NULL,                                  /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    NULL,                                  /* create location configuration */
    NULL                                   /* merge location configuration */
};


ngx_module_t  ngx_http_mcp_files_module = {
    NGX_MODULE_V1,
    &ngx_http_mcp_files_module_ctx,        /* module context */
    ngx_http_mcp_files_commands,           /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    ngx_http_mcp_files_init_process,       /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


static void *
ngx_http_mcp_files_create_main_conf(ngx_conf_t *cf)
{
    ngx_http_mcp_files_main_conf_t  *fmcf;

    fmcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_mcp_files_main_conf_t));
    if (fmcf == NULL) {
        return NULL;
    }

    if (ngx_array_init(&fmcf->trees, cf->pool, 4,
                       sizeof(ngx_http_mcp_tree_t *)) != NGX_OK
        || ngx_array_init(&fmcf->prompts, cf->pool, 4,
                          sizeof(ngx_http_mcp_prompt_t *)) != NGX_OK
        || ngx_array_init(&fmcf->sets, cf->pool, 4,
                          sizeof(ngx_http_mcp_files_set_t)) != NGX_OK)
    {
        return NULL;
    }

    return fmcf;
}


/*
 * mcp_resources DIR uri=PREFIX [max_size=SIZE] [watch=TIME|off]
 */

static char *
ngx_http_mcp_resources(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_mcp_files_main_conf_t *fmcf = conf;

    char                 *rv;
    u_char                path[NGX_HTTP_MCP_FILES_PATH];
    ngx_str_t            *value;
    ngx_file_info_t       fi;
    ngx_http_mcp_set_t   *set;
    ngx_http_mcp_tree_t  *tree, **tp;

    value = cf->args->elts;

    tree = ngx_pcalloc(cf->pool, sizeof(ngx_http_mcp_tree_t));
    if (tree == NULL) {
        return NGX_CONF_ERROR;
    }

    tree->root = value[1];

    if (ngx_conf_full_name(cf->cycle, &tree->root, 0) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    while (tree->root.len > 1 && tree->root.data[tree->root.len - 1] == '/')
    {
        tree->root.len--;
    }

    tree->root.data[tree->root.len] = '\0';

    if (tree->root.len == 1) {
        return "does not serve the root directory \"/\"";
    }

    if (tree->root.len >= NGX_HTTP_MCP_FILES_PATH / 2) {
        return "has a directory name that is too long";
    }

    rv = ngx_http_mcp_files_args(cf, tree);
    if (rv != NGX_CONF_OK) {
        return rv;
    }

    if (ngx_file_info(tree->root.data, &fi) == NGX_FILE_ERROR) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                           ngx_file_info_n " \"%V\" failed", &tree->root);
        return NGX_CONF_ERROR;
    }

    if (!ngx_is_dir(&fi)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"%V\" is not a directory", &tree->root);
        return NGX_CONF_ERROR;
    }

    if (ngx_array_init(&tree->files, cf->pool, 64,
                       sizeof(ngx_http_mcp_file_t)) != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    ngx_memcpy(path, tree->root.data, tree->root.len + 1);

    if (ngx_http_mcp_files_scan(cf, tree, path, tree->root.len, 0)
        != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    /* readdir() order is the file system's: the listing's is the name's */

    ngx_qsort(tree->files.elts, tree->files.nelts,
              sizeof(ngx_http_mcp_file_t), ngx_http_mcp_files_cmp);

    tree->clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);

    set = ngx_http_mcp_conf_set(cf);

    if (set == NULL
        || ngx_http_mcp_files_register(cf, set, tree) != NGX_OK
        || ngx_http_mcp_files_use_set(cf, fmcf, set) != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    tp = ngx_array_push(&fmcf->trees);
    if (tp == NULL) {
        return NGX_CONF_ERROR;
    }

    *tp = tree;

    if (tree->watch && (fmcf->watch == 0 || tree->watch < fmcf->watch)) {
        fmcf->watch = tree->watch;
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, cf->log, 0,
                   "mcp resources \"%V\": %ui files as %V",
                   &tree->root, tree->files.nelts, &tree->prefix);

    return NGX_CONF_OK;
}


static char *
ngx_http_mcp_files_args(ngx_conf_t *cf, ngx_http_mcp_tree_t *tree)
{
    u_char      *p, *last;
    ssize_t      size;
    ngx_str_t   *value, s;
    ngx_uint_t   i;
    ngx_msec_t   watch;

    value = cf->args->elts;

    tree->max_size = 1024 * 1024;
    tree->watch = 5000;

    for (i = 2; i < cf->args->nelts; i++) {

        if (ngx_strncmp(value[i].data, "uri=", 4) == 0) {
            tree->prefix.data = value[i].data + 4;
            tree->prefix.len = value[i].len - 4;
            continue;
        }

        if (ngx_strncmp(value[i].data, "max_size=", 9) == 0) {
            s.data = value[i].data + 9;
            s.len = value[i].len - 9;

            size = ngx_parse_size(&s);
            if (size <= 0 || size > 64 * 1024 * 1024) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid max_size \"%V\": a size from "
                                   "1 to 64m", &s);
                return NGX_CONF_ERROR;
            }

            tree->max_size = size;
            continue;
        }

        if (ngx_strncmp(value[i].data, "watch=", 6) == 0) {
            s.data = value[i].data + 6;
            s.len = value[i].len - 6;

            if (s.len == 3 && ngx_strncmp(s.data, "off", 3) == 0) {
                tree->watch = 0;
                continue;
            }

            watch = ngx_parse_time(&s, 0);
            if (watch == (ngx_msec_t) NGX_ERROR || watch < 100) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid watch \"%V\": a time of 100ms "
                                   "or more, or \"off\"", &s);
                return NGX_CONF_ERROR;
            }

            tree->watch = watch;
            continue;
        }

        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid parameter \"%V\"", &value[i]);
        return NGX_CONF_ERROR;
    }

    if (tree->prefix.len == 0) {
        return "needs uri=PREFIX";
    }

    /* a scheme ("file:", "docs:"), then what a URI and a template allow */

    p = tree->prefix.data;
    last = p + tree->prefix.len;

    if (!((*p | 0x20) >= 'a' && (*p | 0x20) <= 'z')) {
        goto invalid;
    }

    while (p < last && *p != ':') {
        if (!(((*p | 0x20) >= 'a' && (*p | 0x20) <= 'z')
              || (*p >= '0' && *p <= '9')
              || *p == '+' || *p == '-' || *p == '.'))
        {
            goto invalid;
        }

        p++;
    }

    if (p == last) {
        goto invalid;
    }

    for (p = tree->prefix.data; p < last; p++) {
        if (*p <= ' ' || *p >= 0x7f || ngx_strchr("{}\"<>\\^`|", *p)) {
            goto invalid;
        }
    }

    return NGX_CONF_OK;

invalid:

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "invalid uri \"%V\": a URI with a scheme, without "
                       "spaces, braces or quotes", &tree->prefix);
    return NGX_CONF_ERROR;
}


static char *
ngx_http_mcp_prompt(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_mcp_files_main_conf_t *fmcf = conf;

    ngx_http_mcp_set_t      *set;
    ngx_http_mcp_prompt_t   *prompt, **pp;

    set = ngx_http_mcp_conf_set(cf);
    if (set == NULL) {
        return NGX_CONF_ERROR;
    }

    prompt = ngx_http_mcp_prompt_conf(cf, set);

    if (prompt == NULL || ngx_http_mcp_files_use_set(cf, fmcf, set) != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    pp = ngx_array_push(&fmcf->prompts);
    if (pp == NULL) {
        return NGX_CONF_ERROR;
    }

    *pp = prompt;

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_http_mcp_files_use_set(ngx_conf_t *cf,
    ngx_http_mcp_files_main_conf_t *fmcf, ngx_http_mcp_set_t *set)
{
    ngx_uint_t                 i;
    ngx_http_mcp_files_set_t  *s;

    s = fmcf->sets.elts;

    for (i = 0; i < fmcf->sets.nelts; i++) {
        if (s[i].set == set) {
            return NGX_OK;
        }
    }

    s = ngx_array_push(&fmcf->sets);
    if (s == NULL) {
        return NGX_ERROR;
    }

    s->set = set;
    s->next = NULL;

    return NGX_OK;
}


/*
 * Completion: a set's handler is one; ours is installed once the whole
 * configuration is read, after any "mcp_builtin" of the level brought
 * its own, which ours calls for the entries that are not ours.  The
 * types of a level are merged by now too: the listing gets its
 * mimeType.
 */

static ngx_int_t
ngx_http_mcp_files_postconfiguration(ngx_conf_t *cf)
{
    u_char                           mime[256];
    ngx_str_t                        type;
    ngx_uint_t                       i, k;
    ngx_http_mcp_file_t             *f;
    ngx_http_mcp_tree_t            **tree;
    ngx_http_mcp_files_set_t        *s;
    ngx_http_mcp_files_main_conf_t  *fmcf;

    fmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_mcp_files_module);

    s = fmcf->sets.elts;

    for (i = 0; i < fmcf->sets.nelts; i++) {
        s[i].next = s[i].set->complete;
        s[i].set->complete = ngx_http_mcp_files_complete;
    }

    tree = fmcf->trees.elts;

    for (i = 0; i < fmcf->trees.nelts; i++) {
        f = tree[i]->files.elts;

        for (k = 0; k < tree[i]->files.nelts; k++) {
            ngx_http_mcp_files_type(tree[i], &f[k].rel, &type);

            *ngx_cpymem(mime, type.data, ngx_min(type.len, sizeof(mime) - 1))
                = '\0';

            if (cJSON_AddStringToObject(f[k].desc, "mimeType", (char *) mime)
                == NULL)
            {
                return NGX_ERROR;
            }
        }
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_files_scan(ngx_conf_t *cf, ngx_http_mcp_tree_t *tree,
    u_char *path, size_t len, ngx_uint_t depth)
{
    size_t           n;
    u_char          *p;
    ngx_int_t        rc;
    ngx_str_t        name;
    ngx_dir_t        dir;
    ngx_file_info_t  fi;

    if (depth > NGX_HTTP_MCP_FILES_DEPTH) {
        ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                           "mcp_resources: \"%s\" is deeper than %d "
                           "directories, not listed", path,
                           NGX_HTTP_MCP_FILES_DEPTH);
        return NGX_OK;
    }

    name.len = len;
    name.data = path;

    if (ngx_open_dir(&name, &dir) == NGX_ERROR) {
        ngx_conf_log_error(depth ? NGX_LOG_WARN : NGX_LOG_EMERG, cf,
                           ngx_errno, ngx_open_dir_n " \"%s\" failed", path);
        return depth ? NGX_OK : NGX_ERROR;
    }

    rc = NGX_OK;

    for ( ;; ) {
        ngx_set_errno(0);

        if (ngx_read_dir(&dir) == NGX_ERROR) {
            if (ngx_errno != NGX_ENOMOREFILES) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                                   ngx_read_dir_n " \"%s\" failed", path);
                rc = NGX_ERROR;
            }

            break;
        }

        p = ngx_de_name(&dir);
        n = ngx_de_namelen(&dir);

        /* "." and "..", and hidden files: neither listed nor read */

        if (p[0] == '.') {
            continue;
        }

        if (len + 1 + n >= NGX_HTTP_MCP_FILES_PATH) {
            continue;
        }

        path[len] = '/';
        ngx_memcpy(path + len + 1, p, n + 1);

        if (ngx_link_info(path, &fi) == NGX_FILE_ERROR) {
            continue;
        }

        if (ngx_is_dir(&fi)) {
            rc = ngx_http_mcp_files_scan(cf, tree, path, len + 1 + n,
                                         depth + 1);

        } else if (ngx_is_file(&fi)) {
            rc = ngx_http_mcp_files_add(cf, tree, path, len + 1 + n, &fi);
        }

        /* symbolic links, devices, FIFOs, sockets: not resources */

        if (rc != NGX_OK) {
            break;
        }
    }

    path[len] = '\0';

    (void) ngx_close_dir(&dir);

    return rc;
}


static ngx_int_t
ngx_http_mcp_files_add(ngx_conf_t *cf, ngx_http_mcp_tree_t *tree,
    u_char *path, size_t len, ngx_file_info_t *fi)
{
    u_char               *p;
    ngx_http_mcp_file_t  *f;

    f = ngx_array_push(&tree->files);
    if (f == NULL) {
        return NGX_ERROR;
    }

    ngx_memzero(f, sizeof(ngx_http_mcp_file_t));

    f->path.len = len;
    f->path.data = ngx_pnalloc(cf->pool, len + 1);
    if (f->path.data == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(f->path.data, path, len + 1);

    f->rel.data = f->path.data + tree->root.len + 1;
    f->rel.len = len - tree->root.len - 1;

    /* PREFIX and the path percent-encoded, every byte at most 3 */

    p = ngx_pnalloc(cf->pool, tree->prefix.len + 3 * f->rel.len + 1);
    if (p == NULL) {
        return NGX_ERROR;
    }

    f->uri.data = p;
    p = ngx_cpymem(p, tree->prefix.data, tree->prefix.len);
    p += ngx_http_mcp_files_escape(p, f->rel.data, f->rel.len);
    *p = '\0';
    f->uri.len = p - f->uri.data;

    ngx_http_mcp_files_stamp(f, fi);

    return NGX_OK;
}


static int ngx_libc_cdecl
ngx_http_mcp_files_cmp(const void *one, const void *two)
{
    const ngx_http_mcp_file_t  *a = one;
    const ngx_http_mcp_file_t  *b = two;

    return ngx_strcmp(a->rel.data, b->rel.data);
}


/*
 * The files as resources, {"uri", "name"} (mimeType comes once the types
 * are merged), and the template that reaches the tree.
 */

static ngx_int_t
ngx_http_mcp_files_register(ngx_conf_t *cf, ngx_http_mcp_set_t *set,
    ngx_http_mcp_tree_t *tree)
{
    char                  *text;
    cJSON                 *obj;
    u_char                *p;
    ngx_int_t              rc;
    ngx_uint_t             i;
    ngx_http_mcp_file_t   *f;
    ngx_http_mcp_entry_t  *e;

    f = tree->files.elts;

    for (i = 0; i < tree->files.nelts; i++) {
        obj = cJSON_CreateObject();

        /* a name that is no UTF-8 text is shown as its URI path */

        if (cJSON_AddStringToObject(obj, "uri", (char *) f[i].uri.data)
            == NULL
            || cJSON_AddStringToObject(obj, "name",
                   ngx_http_mcp_prompt_utf8(f[i].rel.data, f[i].rel.len)
                   ? (char *) f[i].rel.data
                   : (char *) f[i].uri.data + tree->prefix.len)
               == NULL)
        {
            cJSON_Delete(obj);
            return NGX_ERROR;
        }

        text = cJSON_PrintUnformatted(obj);
        cJSON_Delete(obj);

        if (text == NULL) {
            return NGX_ERROR;
        }

        rc = ngx_http_mcp_add_resource(cf, set, text,
                                       ngx_http_mcp_files_read, tree);
        cJSON_free(text);

        if (rc != NGX_OK) {
            return NGX_ERROR;
        }

        e = set->resources.elts;
        f[i].desc = e[set->resources.nelts - 1].desc;
    }

    p = ngx_pnalloc(cf->pool, tree->prefix.len + sizeof("{+path}"));
    if (p == NULL) {
        return NGX_ERROR;
    }

    ngx_sprintf(p, "%V{+path}%Z", &tree->prefix);

    obj = cJSON_CreateObject();

    if (cJSON_AddStringToObject(obj, "uriTemplate", (char *) p) == NULL
        || cJSON_AddStringToObject(obj, "name",
                                   (char *) p) == NULL
        || cJSON_AddStringToObject(obj, "description",
                                   "The files of a directory, by path")
           == NULL)
    {
        cJSON_Delete(obj);
        return NGX_ERROR;
    }

    text = cJSON_PrintUnformatted(obj);
    cJSON_Delete(obj);

    if (text == NULL) {
        return NGX_ERROR;
    }

    rc = ngx_http_mcp_add_template(cf, set, text, ngx_http_mcp_files_read,
                                   tree);
    cJSON_free(text);

    return rc;
}


/* RFC 3986 path: unreserved characters and "/" as they are */

static size_t
ngx_http_mcp_files_escape(u_char *dst, u_char *src, size_t len)
{
    u_char  *d, c;

    static u_char  hex[] = "0123456789ABCDEF";

    d = dst;

    while (len--) {
        c = *src++;

        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
            || (c >= '0' && c <= '9')
            || c == '-' || c == '.' || c == '_' || c == '~' || c == '/')
        {
            *d++ = c;
            continue;
        }

        *d++ = '%';
        *d++ = hex[c >> 4];
        *d++ = hex[c & 0xf];
    }

    return d - dst;
}


/* the MIME type nginx would send for path: "types", then default_type */

static void
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

static ngx_int_t
ngx_http_mcp_files_read(ngx_http_mcp_call_t *call)
{
    u_char               *data, msg[160];
    size_t                len;
    ssize_t               n;
    ngx_fd_t              fd;
    ngx_str_t             path;
    ngx_log_t            *log;
    ngx_pool_t           *pool;
    ngx_file_info_t       fi;
    ngx_http_mcp_tree_t  *tree;

    tree = ngx_http_mcp_call_entry_data(call);
    pool = ngx_http_mcp_call_pool(call);
    log = ngx_http_mcp_call_get_log(call);

    if (ngx_http_mcp_files_path(pool, tree, ngx_http_mcp_call_uri(call),
                                &path)
        != NGX_OK)
    {
        ngx_http_mcp_files_not_found(call);
        return NGX_OK;
    }

    fd = ngx_http_mcp_files_open(tree, path.data, &fi, log);

    if (fd == NGX_INVALID_FILE) {
        ngx_http_mcp_files_not_found(call);
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
        ssize_t  r;

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

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, log, err,
                   "mcp resources: \"%s\" below \"%V\" refused",
                   path, &tree->root);

    return NGX_INVALID_FILE;
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


static void
ngx_http_mcp_files_not_found(ngx_http_mcp_call_t *call)
{
    ngx_http_mcp_call_error(call, NGX_HTTP_MCP_RESOURCE_NOT_FOUND,
                            "Resource not found");
}


/*
 * completion/complete: our prompts' arguments, our templates' path; any
 * other entry of the set goes to the handler the set had before ours.
 */

static ngx_int_t
ngx_http_mcp_files_complete(ngx_http_mcp_call_t *call)
{
    void                            *data;
    ngx_str_t                        name, value, *paths;
    ngx_uint_t                       i, k, n;
    ngx_pool_t                      *pool;
    ngx_http_mcp_set_t              *set;
    ngx_http_mcp_file_t             *f;
    ngx_http_mcp_tree_t            **tree;
    ngx_http_mcp_prompt_t          **prompt;
    ngx_http_mcp_files_set_t        *s;
    ngx_http_mcp_files_main_conf_t  *fmcf;

    fmcf = ngx_http_cycle_get_module_main_conf(ngx_cycle,
                                               ngx_http_mcp_files_module);

    data = ngx_http_mcp_call_entry_data(call);

    prompt = fmcf->prompts.elts;

    for (i = 0; i < fmcf->prompts.nelts; i++) {
        if (data == prompt[i]) {
            return ngx_http_mcp_prompt_complete(call, prompt[i]);
        }
    }

    tree = fmcf->trees.elts;

    for (i = 0; i < fmcf->trees.nelts; i++) {
        if (data != tree[i]) {
            continue;
        }

        ngx_http_mcp_prompt_argument(call, &name, &value);

        if (name.len != 4 || ngx_strncmp(name.data, "path", 4) != 0) {
            return ngx_http_mcp_prompt_values(call, NULL, 0);
        }

        /* the paths that begin with the value, at most what is shown */

        pool = ngx_http_mcp_call_pool(call);
        paths = ngx_pnalloc(pool, (NGX_HTTP_MCP_FILES_COMPLETIONS + 1)
                                  * sizeof(ngx_str_t));
        if (paths == NULL) {
            return NGX_ERROR;
        }

        f = tree[i]->files.elts;
        n = 0;

        for (k = 0; k < tree[i]->files.nelts; k++) {
            if (f[k].rel.len >= value.len
                && ngx_strncmp(f[k].rel.data, value.data, value.len) == 0
                && ngx_http_mcp_prompt_utf8(f[k].rel.data, f[k].rel.len))
            {
                if (n <= NGX_HTTP_MCP_FILES_COMPLETIONS) {
                    paths[n] = f[k].rel;
                }

                n++;
            }
        }

        return ngx_http_mcp_prompt_values(call, paths, n);
    }

    set = ngx_http_mcp_call_set(call);
    s = fmcf->sets.elts;

    for (i = 0; i < fmcf->sets.nelts; i++) {
        if (s[i].set == set && s[i].next) {
            return s[i].next(call);
        }
    }

    return ngx_http_mcp_prompt_values(call, NULL, 0);
}


/* watch=: worker 0 polls, the others never start the timer */

static ngx_int_t
ngx_http_mcp_files_init_process(ngx_cycle_t *cycle)
{
    ngx_http_mcp_files_main_conf_t  *fmcf;

    if (ngx_worker != 0
        || (ngx_process != NGX_PROCESS_WORKER
            && ngx_process != NGX_PROCESS_SINGLE))
    {
        return NGX_OK;
    }

    fmcf = ngx_http_cycle_get_module_main_conf(cycle,
                                               ngx_http_mcp_files_module);

    if (fmcf == NULL || fmcf->watch == 0) {
        return NGX_OK;
    }

    fmcf->timer.handler = ngx_http_mcp_files_poll;
    fmcf->timer.data = fmcf;
    fmcf->timer.log = cycle->log;
    fmcf->timer.cancelable = 1;

    ngx_add_timer(&fmcf->timer, fmcf->watch);

    return NGX_OK;
}


static void
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


static void
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
