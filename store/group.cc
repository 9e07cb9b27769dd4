// Groups: children, listing, kinds.
#include "store/group.h"

#include "core/error.h"
#include "core/strings.h"
#include "store/h5_internal.h"

namespace pc::store {
using detail::Hid;
using detail::LastError;

namespace {

// "a/b/c" -> {"a", "a/b", "a/b/c"}; every component a valid name.
std::vector<std::string> PathPrefixes(const std::string& where, const std::string& path) {
  PC_CHECK(!path.empty(), where, ": empty name");
  std::vector<std::string> prefixes;
  std::string prefix;
  for (const std::string& part : Split(path, '/')) {
    detail::CheckName(where, "path component", part);
    prefix += (prefix.empty() ? "" : "/") + part;
    prefixes.push_back(prefix);
  }
  return prefixes;
}

// The kind of the object at `name` (relative to `loc`, whose intermediate parts exist).
ChildKind KindAt(hid_t loc, const std::string& name) {
  htri_t exists = H5Lexists(loc, name.c_str(), H5P_DEFAULT);
  if (exists <= 0) {
    H5Eclear2(H5E_DEFAULT);
    return ChildKind::kMissing;
  }
  H5O_info_t info;
  if (H5Oget_info_by_name2(loc, name.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0) {
    H5Eclear2(H5E_DEFAULT);  // a dangling soft or external link
    return ChildKind::kOther;
  }
  if (info.type == H5O_TYPE_GROUP) return ChildKind::kGroup;
  if (info.type == H5O_TYPE_DATASET) return ChildKind::kDataset;
  return ChildKind::kOther;
}

herr_t CollectLink(hid_t /*group*/, const char* name, const H5L_info_t* /*info*/, void* data) {
  static_cast<std::vector<std::string>*>(data)->emplace_back(name);
  return 0;
}

const char* KindName(ChildKind kind) {
  switch (kind) {
    case ChildKind::kGroup: return "a group";
    case ChildKind::kDataset: return "a dataset";
    case ChildKind::kOther: return "neither a group nor a dataset";
    case ChildKind::kMissing: return "missing";
  }
  return "?";
}

}  // namespace

Group::Group(std::shared_ptr<detail::FileState> file, std::string path)
    : file_(std::move(file)), path_(std::move(path)) {}

const std::string& Group::file_path() const { return file_->display; }

std::string Group::Where() const { return Str(file_->display, ":", path_); }

std::string Group::ChildPath(const std::string& name) const { return path_ == "/" ? "/" + name : path_ + "/" + name; }

ChildKind Group::Kind(const std::string& name) const {
  detail::CheckOpen(*file_, Where(), Str("look up '", name, "'"), false);
  std::vector<std::string> prefixes = PathPrefixes(Where(), name);
  Hid g = detail::OpenGroupAt(*file_, path_, Where());
  for (size_t i = 0; i < prefixes.size(); ++i) {
    ChildKind kind = KindAt(g.get(), prefixes[i]);
    if (i + 1 == prefixes.size()) return kind;
    if (kind != ChildKind::kGroup) return ChildKind::kMissing;
  }
  return ChildKind::kMissing;
}

bool Group::Has(const std::string& name) const { return Kind(name) != ChildKind::kMissing; }

bool Group::IsTable(const std::string& name) const { return IsGroup(name) && OpenGroup(name).HasAttr("columns"); }

std::vector<std::string> Group::List(Order order) const {
  detail::CheckOpen(*file_, Where(), "list the group", false);
  Hid g = detail::OpenGroupAt(*file_, path_, Where());
  std::vector<std::string> names;
  hsize_t idx = 0;
  if (order == Order::kCreation &&
      H5Literate(g.get(), H5_INDEX_CRT_ORDER, H5_ITER_INC, &idx, CollectLink, &names) >= 0) {
    return names;
  }
  H5Eclear2(H5E_DEFAULT);  // not tracked (a group written by another tool): name order
  names.clear();
  idx = 0;
  PC_CHECK(H5Literate(g.get(), H5_INDEX_NAME, H5_ITER_INC, &idx, CollectLink, &names) >= 0, Where(),
           ": cannot list the group: ", LastError());
  return names;
}

std::vector<std::string> Group::ListGroups(Order order) const {
  std::vector<std::string> names = List(order);
  Hid g = detail::OpenGroupAt(*file_, path_, Where());
  std::vector<std::string> groups;
  for (const std::string& n : names)
    if (KindAt(g.get(), n) == ChildKind::kGroup) groups.push_back(n);
  return groups;
}

Group Group::CreateGroup(const std::string& name) const {
  detail::CheckName(Where(), "group", name);
  detail::CheckOpen(*file_, Where(), Str("create group '", name, "'"), true);
  PC_CHECK(!Has(name), Where(), ": cannot create group '", name, "': '", name, "' already exists");
  Hid g = detail::OpenGroupAt(*file_, path_, Where());
  Hid plist = detail::GroupCreatePlist();
  Hid child(H5Gcreate2(g.get(), name.c_str(), H5P_DEFAULT, plist.get(), H5P_DEFAULT), H5Gclose);
  PC_CHECK(child.valid(), Where(), ": cannot create group '", name, "': ", LastError());
  PC_CHECK(child.Close() >= 0, Where(), ": cannot create group '", name, "': ", LastError());
  return Group(file_, ChildPath(name));
}

Group Group::OpenGroup(const std::string& name) const {
  ChildKind kind = Kind(name);
  PC_CHECK(kind != ChildKind::kMissing, Where(), ": no group '", name, "' (children: ", detail::NameList(List()), ")");
  PC_CHECK(kind == ChildKind::kGroup, Where(), ": '", name, "' is ", KindName(kind), ", expected a group");
  return Group(file_, ChildPath(name));
}

void Group::CheckCount(const std::string& name, int64_t count, const Shape& shape) const {
  PC_CHECK(!shape.empty(), Where(), ": cannot write dataset '", name, "': the shape needs at least one dimension");
  for (int64_t d : shape)
    PC_CHECK(d >= 0, Where(), ": cannot write dataset '", name, "': invalid shape ", ShapeString(shape));
  PC_CHECK(count == NumElements(shape), Where(), ": cannot write dataset '", name, "': shape ", ShapeString(shape),
           " needs ", NumElements(shape), " values, got ", count);
}

}  // namespace pc::store
