
/*
 * ngx_http_mcp_files_module, prompts from files:
 *
 *     mcp_prompt NAME FILE {
 *         description "...";
 *         argument    NAME [required] ["description"] [values=a,b,c];
 *     }
 *
 * The file is read and cut into parts at configuration time (a reload
 * reads it again): literal text, and the {{argument}} places of declared
 * arguments.  A {{name}} that is no declared argument stays as it is,
 * text that merely looks like a placeholder (a Jinja example in the
 * prompt) must survive; "nginx -t" warns about it, a typo shows.
 * Substitution is one pass over the parts: a value that contains
 * "{{...}}" is never expanded again.
 */


#include "ngx_http_mcp_files.h"


/* a prompt is text for a model, not a document store */
#define NGX_HTTP_MCP_PROMPT_MAX_SIZE  (256 * 1024)


typedef struct {
    ngx_str_t                  name;
    ngx_str_t                  description;
    ngx_array_t               *values;    /* ngx_str_t, or NULL */
    unsigned                   required:1;
} ngx_http_mcp_prompt_arg_t;


typedef struct {
    ngx_str_t                  text;      /* literal; data NULL: arg */
    ngx_uint_t                 arg;
} ngx_http_mcp_prompt_part_t;


struct ngx_http_mcp_prompt_s {
    ngx_str_t                  name;
    ngx_str_t                  file;
    ngx_str_t                  description;
    ngx_str_t                  text;
    ngx_array_t                args;      /* ngx_http_mcp_prompt_arg_t */
    ngx_array_t                parts;     /* ngx_http_mcp_prompt_part_t */
};


static char *ngx_http_mcp_prompt_block(ngx_conf_t *cf, ngx_command_t *dummy,
    void *conf);
static char *ngx_http_mcp_prompt_arg(ngx_conf_t *cf,
    ngx_http_mcp_prompt_t *prompt);
static ngx_int_t ngx_http_mcp_prompt_read(ngx_conf_t *cf,
    ngx_http_mcp_prompt_t *prompt);
static ngx_int_t ngx_http_mcp_prompt_parse(ngx_conf_t *cf,
    ngx_http_mcp_prompt_t *prompt);
static ngx_int_t ngx_http_mcp_prompt_literal(ngx_http_mcp_prompt_t *prompt,
    u_char *start, u_char *end);
static char *ngx_http_mcp_prompt_listing(ngx_http_mcp_prompt_t *prompt);
static ngx_int_t ngx_http_mcp_prompt_get(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_prompt_invalid(ngx_http_mcp_call_t *call,
    const char *fmt, ngx_str_t *name);


ngx_http_mcp_prompt_t *
ngx_http_mcp_prompt_conf(ngx_conf_t *cf, ngx_http_mcp_set_t *set)
{
    char                   *rv, *json;
    ngx_int_t               rc;
    ngx_str_t              *value;
    ngx_conf_t              save;
    ngx_http_mcp_prompt_t  *prompt;

    value = cf->args->elts;

    prompt = ngx_pcalloc(cf->pool, sizeof(ngx_http_mcp_prompt_t));
    if (prompt == NULL) {
        return NULL;
    }

    prompt->name = value[1];
    prompt->file = value[2];

    if (prompt->name.len == 0
        || !ngx_http_mcp_prompt_utf8(prompt->name.data, prompt->name.len))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid prompt name \"%V\"", &prompt->name);
        return NULL;
    }

    if (ngx_array_init(&prompt->args, cf->pool, 4,
                       sizeof(ngx_http_mcp_prompt_arg_t)) != NGX_OK
        || ngx_array_init(&prompt->parts, cf->pool, 8,
                          sizeof(ngx_http_mcp_prompt_part_t)) != NGX_OK)
    {
        return NULL;
    }

    save = *cf;
    cf->handler = ngx_http_mcp_prompt_block;
    cf->handler_conf = (void *) prompt;

    rv = ngx_conf_parse(cf, NULL);

    *cf = save;

    if (rv != NGX_CONF_OK) {
        return NULL;
    }

    if (ngx_http_mcp_prompt_read(cf, prompt) != NGX_OK
        || ngx_http_mcp_prompt_parse(cf, prompt) != NGX_OK)
    {
        return NULL;
    }

    json = ngx_http_mcp_prompt_listing(prompt);
    if (json == NULL) {
        return NULL;
    }

    rc = ngx_http_mcp_add_prompt(cf, set, json, ngx_http_mcp_prompt_get,
                                 prompt);
    cJSON_free(json);

    return (rc == NGX_OK) ? prompt : NULL;
}


static char *
ngx_http_mcp_prompt_block(ngx_conf_t *cf, ngx_command_t *dummy, void *conf)
{
    ngx_http_mcp_prompt_t  *prompt = conf;

    ngx_str_t  *value;

    value = cf->args->elts;

    if (value[0].len == 11
        && ngx_strncmp(value[0].data, "description", 11) == 0)
    {
        if (cf->args->nelts != 2) {
            return "needs one text";
        }

        if (prompt->description.data) {
            return "is duplicate";
        }

        prompt->description = value[1];
        return NGX_CONF_OK;
    }

    if (value[0].len == 8 && ngx_strncmp(value[0].data, "argument", 8) == 0)
    {
        return ngx_http_mcp_prompt_arg(cf, prompt);
    }

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "unknown directive \"%V\" in mcp_prompt", &value[0]);

    return NGX_CONF_ERROR;
}


/* argument NAME [required] ["description"] [values=a,b,c] */

static char *
ngx_http_mcp_prompt_arg(ngx_conf_t *cf, ngx_http_mcp_prompt_t *prompt)
{
    u_char                     *p, *last, *start;
    ngx_str_t                  *value, *v;
    ngx_uint_t                  i;
    ngx_http_mcp_prompt_arg_t  *arg;

    value = cf->args->elts;

    if (cf->args->nelts < 2 || cf->args->nelts > 5) {
        return "needs a name, then [required] [\"description\"] "
               "[values=...]";
    }

    for (p = value[1].data; p < value[1].data + value[1].len; p++) {
        if (!((*p | 0x20) >= 'a' && (*p | 0x20) <= 'z')
            && !(*p >= '0' && *p <= '9') && *p != '_' && *p != '-')
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid argument name \"%V\": letters, "
                               "digits, \"_\" and \"-\"", &value[1]);
            return NGX_CONF_ERROR;
        }
    }

    if (value[1].len == 0) {
        return "needs a name";
    }

    arg = prompt->args.elts;

    for (i = 0; i < prompt->args.nelts; i++) {
        if (arg[i].name.len == value[1].len
            && ngx_strncmp(arg[i].name.data, value[1].data, value[1].len)
               == 0)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "duplicate argument \"%V\"", &value[1]);
            return NGX_CONF_ERROR;
        }
    }

    arg = ngx_array_push(&prompt->args);
    if (arg == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_memzero(arg, sizeof(ngx_http_mcp_prompt_arg_t));
    arg->name = value[1];

    for (i = 2; i < cf->args->nelts; i++) {

        if (value[i].len == 8
            && ngx_strncmp(value[i].data, "required", 8) == 0)
        {
            arg->required = 1;
            continue;
        }

        if (value[i].len > 7
            && ngx_strncmp(value[i].data, "values=", 7) == 0)
        {
            arg->values = ngx_array_create(cf->pool, 4, sizeof(ngx_str_t));
            if (arg->values == NULL) {
                return NGX_CONF_ERROR;
            }

            start = value[i].data + 7;
            last = value[i].data + value[i].len;

            for (p = start; p <= last; p++) {
                if (p < last && *p != ',') {
                    continue;
                }

                if (p == start) {
                    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                       "empty value in \"%V\"", &value[i]);
                    return NGX_CONF_ERROR;
                }

                v = ngx_array_push(arg->values);
                if (v == NULL) {
                    return NGX_CONF_ERROR;
                }

                v->len = p - start;
                v->data = ngx_pnalloc(cf->pool, v->len + 1);
                if (v->data == NULL) {
                    return NGX_CONF_ERROR;
                }

                *ngx_cpymem(v->data, start, v->len) = '\0';
                start = p + 1;
            }

            continue;
        }

        if (arg->description.data) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid parameter \"%V\"", &value[i]);
            return NGX_CONF_ERROR;
        }

        arg->description = value[i];
    }

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_http_mcp_prompt_read(ngx_conf_t *cf, ngx_http_mcp_prompt_t *prompt)
{
    ssize_t          n;
    ngx_fd_t         fd;
    ngx_file_t       file;
    ngx_file_info_t  fi;

    if (ngx_conf_full_name(cf->cycle, &prompt->file, 1) != NGX_OK) {
        return NGX_ERROR;
    }

    fd = ngx_open_file(prompt->file.data, NGX_FILE_RDONLY|NGX_FILE_NONBLOCK,
                       NGX_FILE_OPEN, 0);

    if (fd == NGX_INVALID_FILE) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                           ngx_open_file_n " \"%V\" failed", &prompt->file);
        return NGX_ERROR;
    }

    ngx_memzero(&file, sizeof(ngx_file_t));
    file.fd = fd;
    file.name = prompt->file;
    file.log = cf->log;

    if (ngx_fd_info(fd, &fi) == NGX_FILE_ERROR || !ngx_is_file(&fi)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "prompt file \"%V\" is not a regular file",
                           &prompt->file);
        goto failed;
    }

    if (ngx_file_size(&fi) > NGX_HTTP_MCP_PROMPT_MAX_SIZE) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "prompt file \"%V\" is larger than %d bytes",
                           &prompt->file, NGX_HTTP_MCP_PROMPT_MAX_SIZE);
        goto failed;
    }

    prompt->text.len = (size_t) ngx_file_size(&fi);
    prompt->text.data = ngx_pnalloc(cf->pool, prompt->text.len + 1);
    if (prompt->text.data == NULL) {
        goto failed;
    }

    n = ngx_read_file(&file, prompt->text.data, prompt->text.len, 0);

    if (n == NGX_ERROR) {
        goto failed;
    }

    prompt->text.len = n;
    prompt->text.data[n] = '\0';

    (void) ngx_close_file(fd);

    if (!ngx_http_mcp_prompt_utf8(prompt->text.data, prompt->text.len)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "prompt file \"%V\" is not UTF-8 text",
                           &prompt->file);
        return NGX_ERROR;
    }

    return NGX_OK;

failed:

    (void) ngx_close_file(fd);
    return NGX_ERROR;
}


/* the text as parts: literals and {{argument}} places */

static ngx_int_t
ngx_http_mcp_prompt_parse(ngx_conf_t *cf, ngx_http_mcp_prompt_t *prompt)
{
    u_char                      *p, *last, *lit, *name, *end;
    size_t                       len;
    ngx_uint_t                   i;
    ngx_http_mcp_prompt_arg_t   *arg;
    ngx_http_mcp_prompt_part_t  *part;

    p = prompt->text.data;
    last = p + prompt->text.len;
    lit = p;
    arg = prompt->args.elts;

    while (p + 4 <= last) {

        if (p[0] != '{' || p[1] != '{') {
            p++;
            continue;
        }

        /* {{ name }}: spaces around the name are allowed */

        name = p + 2;

        while (name < last && *name == ' ') {
            name++;
        }

        for (end = name; end < last; end++) {
            if (!((*end | 0x20) >= 'a' && (*end | 0x20) <= 'z')
                && !(*end >= '0' && *end <= '9')
                && *end != '_' && *end != '-')
            {
                break;
            }
        }

        len = end - name;

        while (end < last && *end == ' ') {
            end++;
        }

        if (len == 0 || last - end < 2 || end[0] != '}' || end[1] != '}') {
            p++;
            continue;
        }

        for (i = 0; i < prompt->args.nelts; i++) {
            if (arg[i].name.len == len
                && ngx_strncmp(arg[i].name.data, name, len) == 0)
            {
                break;
            }
        }

        if (i == prompt->args.nelts) {
            ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                               "prompt \"%V\": \"%*s\" is no declared "
                               "argument, left as it is",
                               &prompt->name, end + 2 - p, p);
            p = end + 2;
            continue;
        }

        if (ngx_http_mcp_prompt_literal(prompt, lit, p) != NGX_OK) {
            return NGX_ERROR;
        }

        part = ngx_array_push(&prompt->parts);
        if (part == NULL) {
            return NGX_ERROR;
        }

        part->text.data = NULL;
        part->text.len = 0;
        part->arg = i;

        p = end + 2;
        lit = p;
    }

    return ngx_http_mcp_prompt_literal(prompt, lit, last);
}


static ngx_int_t
ngx_http_mcp_prompt_literal(ngx_http_mcp_prompt_t *prompt, u_char *start,
    u_char *end)
{
    ngx_http_mcp_prompt_part_t  *part;

    if (start == end) {
        return NGX_OK;
    }

    part = ngx_array_push(&prompt->parts);
    if (part == NULL) {
        return NGX_ERROR;
    }

    part->text.data = start;
    part->text.len = end - start;
    part->arg = 0;

    return NGX_OK;
}


/* {"name", "description", "arguments": [{"name", "description",
 * "required"}]} */

static char *
ngx_http_mcp_prompt_listing(ngx_http_mcp_prompt_t *prompt)
{
    char                       *json;
    cJSON                      *obj, *args, *a;
    ngx_uint_t                  i;
    ngx_http_mcp_prompt_arg_t  *arg;

    obj = cJSON_CreateObject();

    if (cJSON_AddStringToObject(obj, "name", (char *) prompt->name.data)
        == NULL
        || (prompt->description.data
            && cJSON_AddStringToObject(obj, "description",
                                       (char *) prompt->description.data)
               == NULL))
    {
        goto failed;
    }

    args = cJSON_AddArrayToObject(obj, "arguments");
    if (args == NULL) {
        goto failed;
    }

    arg = prompt->args.elts;

    for (i = 0; i < prompt->args.nelts; i++) {
        a = cJSON_CreateObject();

        if (a == NULL || !cJSON_AddItemToArray(args, a)) {
            cJSON_Delete(a);
            goto failed;
        }

        if (cJSON_AddStringToObject(a, "name", (char *) arg[i].name.data)
            == NULL
            || (arg[i].description.data
                && cJSON_AddStringToObject(a, "description",
                                        (char *) arg[i].description.data)
                   == NULL)
            || cJSON_AddBoolToObject(a, "required", arg[i].required) == NULL)
        {
            goto failed;
        }
    }

    json = cJSON_PrintUnformatted(obj);
    cJSON_Delete(obj);

    return json;

failed:

    cJSON_Delete(obj);
    return NULL;
}


/*
 * prompts/get: every required argument given, every given one a string;
 * arguments that were not declared are ignored, optional ones missing
 * are empty.
 */

static ngx_int_t
ngx_http_mcp_prompt_get(ngx_http_mcp_call_t *call)
{
    u_char                      *text, *p;
    size_t                       len;
    cJSON                       *args, *v, *result, *messages, *msg, *content;
    ngx_uint_t                   i;
    ngx_http_mcp_prompt_t       *prompt;
    ngx_http_mcp_prompt_arg_t   *arg;
    ngx_http_mcp_prompt_part_t  *part;

    prompt = ngx_http_mcp_call_entry_data(call);
    args = ngx_http_mcp_call_arguments(call);

    if (args != NULL && !cJSON_IsObject(args)) {
        return ngx_http_mcp_prompt_invalid(call, "Invalid params: "
                                           "\"arguments\" is no object%V",
                                           NULL);
    }

    arg = prompt->args.elts;

    for (i = 0; i < prompt->args.nelts; i++) {
        v = cJSON_GetObjectItemCaseSensitive(args,
                                             (char *) arg[i].name.data);

        if (v == NULL && arg[i].required) {
            return ngx_http_mcp_prompt_invalid(call, "Invalid params: "
                                               "missing required argument "
                                               "\"%V\"", &arg[i].name);
        }

        if (v != NULL && !cJSON_IsString(v)) {
            return ngx_http_mcp_prompt_invalid(call, "Invalid params: "
                                               "argument \"%V\" is no "
                                               "string", &arg[i].name);
        }
    }

    part = prompt->parts.elts;
    len = 0;

    for (i = 0; i < prompt->parts.nelts; i++) {
        if (part[i].text.data) {
            len += part[i].text.len;
            continue;
        }

        v = cJSON_GetObjectItemCaseSensitive(args,
                                     (char *) arg[part[i].arg].name.data);
        if (v != NULL) {
            len += ngx_strlen(v->valuestring);
        }
    }

    text = ngx_pnalloc(ngx_http_mcp_call_pool(call), len + 1);
    if (text == NULL) {
        return NGX_ERROR;
    }

    p = text;

    for (i = 0; i < prompt->parts.nelts; i++) {
        if (part[i].text.data) {
            p = ngx_cpymem(p, part[i].text.data, part[i].text.len);
            continue;
        }

        v = cJSON_GetObjectItemCaseSensitive(args,
                                     (char *) arg[part[i].arg].name.data);
        if (v != NULL) {
            p = ngx_cpymem(p, v->valuestring, ngx_strlen(v->valuestring));
        }
    }

    *p = '\0';

    result = cJSON_CreateObject();
    messages = cJSON_AddArrayToObject(result, "messages");
    msg = cJSON_CreateObject();

    if (messages == NULL || !cJSON_AddItemToArray(messages, msg)) {
        cJSON_Delete(msg);
        goto failed;
    }

    content = cJSON_AddObjectToObject(msg, "content");

    if ((prompt->description.data
         && cJSON_AddStringToObject(result, "description",
                                    (char *) prompt->description.data)
            == NULL)
        || cJSON_AddStringToObject(msg, "role", "user") == NULL
        || content == NULL
        || cJSON_AddStringToObject(content, "type", "text") == NULL
        || cJSON_AddStringToObject(content, "text", (char *) text) == NULL)
    {
        goto failed;
    }

    ngx_http_mcp_call_result(call, result);

    return NGX_OK;

failed:

    cJSON_Delete(result);
    return NGX_ERROR;
}


static ngx_int_t
ngx_http_mcp_prompt_invalid(ngx_http_mcp_call_t *call, const char *fmt,
    ngx_str_t *name)
{
    u_char     msg[256], *last;
    ngx_str_t  empty = ngx_null_string;

    last = ngx_snprintf(msg, sizeof(msg) - 1, fmt, name ? name : &empty);
    *last = '\0';

    ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_PARAMS, (char *) msg);

    return NGX_OK;
}


ngx_int_t
ngx_http_mcp_prompt_complete(ngx_http_mcp_call_t *call,
    ngx_http_mcp_prompt_t *prompt)
{
    ngx_str_t                   name, value;
    ngx_uint_t                  i;
    ngx_http_mcp_prompt_arg_t  *arg;

    ngx_http_mcp_prompt_argument(call, &name, &value);

    arg = prompt->args.elts;

    for (i = 0; i < prompt->args.nelts; i++) {
        if (arg[i].values
            && arg[i].name.len == name.len
            && ngx_strncmp(arg[i].name.data, name.data, name.len) == 0)
        {
            return ngx_http_mcp_prompt_values(call, arg[i].values->elts,
                                              arg[i].values->nelts);
        }
    }

    return ngx_http_mcp_prompt_values(call, NULL, 0);
}


void
ngx_http_mcp_prompt_argument(ngx_http_mcp_call_t *call, ngx_str_t *name,
    ngx_str_t *value)
{
    cJSON  *arg, *n, *v;

    /* the dispatcher checked both are strings */

    arg = cJSON_GetObjectItemCaseSensitive(ngx_http_mcp_call_params(call),
                                           "argument");
    n = cJSON_GetObjectItemCaseSensitive(arg, "name");
    v = cJSON_GetObjectItemCaseSensitive(arg, "value");

    name->data = (u_char *) (cJSON_IsString(n) ? n->valuestring : "");
    name->len = ngx_strlen(name->data);
    value->data = (u_char *) (cJSON_IsString(v) ? v->valuestring : "");
    value->len = ngx_strlen(value->data);
}


/*
 * The values that begin with the argument's value.  The caller may
 * have counted more than it gave (n): those count in total, and the
 * first NGX_HTTP_MCP_FILES_COMPLETIONS are shown.
 */

ngx_int_t
ngx_http_mcp_prompt_values(ngx_http_mcp_call_t *call, ngx_str_t *values,
    ngx_uint_t n)
{
    cJSON       *result, *completion, *list;
    ngx_str_t    name, value;
    ngx_uint_t   i, total, shown;

    ngx_http_mcp_prompt_argument(call, &name, &value);

    result = cJSON_CreateObject();
    completion = cJSON_AddObjectToObject(result, "completion");
    list = cJSON_AddArrayToObject(completion, "values");

    if (list == NULL) {
        goto failed;
    }

    total = 0;
    shown = 0;

    for (i = 0; i < n; i++) {
        if (i > NGX_HTTP_MCP_FILES_COMPLETIONS) {
            /* counted by the caller, already known to match */
            total++;
            continue;
        }

        if (values[i].len < value.len
            || ngx_strncmp(values[i].data, value.data, value.len) != 0)
        {
            continue;
        }

        total++;

        if (shown == NGX_HTTP_MCP_FILES_COMPLETIONS) {
            continue;
        }

        if (!cJSON_AddItemToArray(list,
                 cJSON_CreateString((char *) values[i].data)))
        {
            goto failed;
        }

        shown++;
    }

    if (cJSON_AddNumberToObject(completion, "total", (double) total) == NULL
        || cJSON_AddBoolToObject(completion, "hasMore", total > shown)
           == NULL)
    {
        goto failed;
    }

    ngx_http_mcp_call_result(call, result);

    return NGX_OK;

failed:

    cJSON_Delete(result);
    return NGX_ERROR;
}


ngx_uint_t
ngx_http_mcp_prompt_utf8(u_char *p, size_t len)
{
    u_char  *last;

    last = p + len;

    while (p < last) {
        if (*p == '\0') {
            return 0;
        }

        if (*p < 0x80) {
            p++;
            continue;
        }

        if (ngx_utf8_decode(&p, last - p) > 0x10ffff) {
            return 0;
        }
    }

    return 1;
}
