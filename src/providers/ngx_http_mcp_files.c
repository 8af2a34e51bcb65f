
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
 * Only regular files are listed; symbolic links, devices, FIFOs and
 * names that begin with a dot are not (ngx_http_mcp_files_read.c reads,
 * with the same rules, and watches).
 */


#include "ngx_http_mcp_files.h"


#if (NGX_HTTP_MCP_API_VERSION != 1)
#error "written for version 1 of the ngx_http_mcp_module API"
#endif


typedef ngx_int_t (*ngx_http_mcp_files_add_pt)(ngx_conf_t *cf,
    ngx_http_mcp_set_t *set, const char *json,
    ngx_http_mcp_handler_pt handler, void *data);


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
static ngx_int_t ngx_http_mcp_files_entry(ngx_conf_t *cf,
    ngx_http_mcp_set_t *set, ngx_http_mcp_files_add_pt add,
    ngx_http_mcp_tree_t *tree, const char **kv);
static size_t ngx_http_mcp_files_escape(u_char *dst, u_char *src,
    size_t len);
static ngx_int_t ngx_http_mcp_files_complete(ngx_http_mcp_call_t *call);


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
    u_char                *p;
    const char            *kv[7];
    ngx_uint_t             i;
    ngx_http_mcp_file_t   *f;
    ngx_http_mcp_entry_t  *e;

    f = tree->files.elts;

    for (i = 0; i < tree->files.nelts; i++) {

        /* a name that is no UTF-8 text is shown as its URI path */

        kv[0] = "uri";
        kv[1] = (char *) f[i].uri.data;
        kv[2] = "name";
        kv[3] = ngx_http_mcp_prompt_utf8(f[i].rel.data, f[i].rel.len)
                ? (char *) f[i].rel.data
                : (char *) f[i].uri.data + tree->prefix.len;
        kv[4] = NULL;

        if (ngx_http_mcp_files_entry(cf, set, ngx_http_mcp_add_resource,
                                     tree, kv)
            != NGX_OK)
        {
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

    kv[0] = "uriTemplate";
    kv[1] = (char *) p;
    kv[2] = "name";
    kv[3] = (char *) p;
    kv[4] = "description";
    kv[5] = "The files of a directory, by path";
    kv[6] = NULL;

    return ngx_http_mcp_files_entry(cf, set, ngx_http_mcp_add_template, tree,
                                    kv);
}


/* an entry whose listing object has the string members kv, key, value */

static ngx_int_t
ngx_http_mcp_files_entry(ngx_conf_t *cf, ngx_http_mcp_set_t *set,
    ngx_http_mcp_files_add_pt add, ngx_http_mcp_tree_t *tree,
    const char **kv)
{
    char       *text;
    cJSON      *obj;
    ngx_int_t   rc;

    obj = cJSON_CreateObject();

    for ( /* void */ ; *kv; kv += 2) {
        if (cJSON_AddStringToObject(obj, kv[0], kv[1]) == NULL) {
            cJSON_Delete(obj);
            return NGX_ERROR;
        }
    }

    text = cJSON_PrintUnformatted(obj);
    cJSON_Delete(obj);

    if (text == NULL) {
        return NGX_ERROR;
    }

    rc = add(cf, set, text, ngx_http_mcp_files_read, tree);
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
